"""Under KVM: the clock KVM states, taken where the sampled fit allows it.

KVM adds a constant to the host's TSC when a guest reads its TSC: guest = host * ratio +
tsc_offset, with the offset and ratio in debugfs (vcpuN/tsc-offset; tsc-scaling-ratio only where
the CPU scales TSCs, else 1). trace-cmd's host-guest time sync takes them as an exact protocol.
spinlab-vm stats reads them into every KVM statistics sample ("tsc", vm-images/spinlab_vm/
kvm_stats.py), and the runner keeps a sample at each repetition's start and end.

Where every repetition's two samples read them, every vCPU has the same offset in every sample
(constant through the run) and the ratio is 1, guest TSC -> host TSC is host = guest -
tsc_offset, exactly: the mapping's bound is 0, where the sampled fit's is tens of microseconds
(its premise, that the guest's rdtsc-to-store time is negligible, fails on a slow guest kernel:
collector/README.md, "Under KVM").

The sampled fit (clock.json) is its check. Causality gives every bracket of the fit one hard
side: the guest read its TSC before the host saw its publication, so host - guest <= host_after
- guest_tsc (clock_check.constant_offset_check). A stated offset above the smallest such side is
refuted: the fit stays the clock, and the report says so with the numbers. The other side is
not hard (a late publication looks like a larger offset), so the check cannot refute an offset
that is too small; the fit's lateness is reported beside it.

This module decides (decide: the reader takes its clock); summary.json keeps what was decided
(clock.kvm_tsc), and the report says it in its clock paragraph (report_doc.kvm_text).
"""
from . import clock_check

METHOD = "kvm-tsc-offset"


def _offsets(samples: dict) -> tuple[dict | None, str | None, int]:
    """({vcpu: (offset, ratio)} the same in every sample, None) or (None, why); and how many
    samples were read."""
    seen, n = {}, 0
    for (phase, rep), pair in sorted(samples.items()):
        for when in ("start", "end"):
            s = pair.get(when)
            if s is None:
                return None, f"kvm-stats/{phase}-r{rep}-{when}.json is missing", n
            tsc = s.get("tsc")
            if tsc is None:
                return None, "the KVM statistics samples do not read KVM's TSC offset (written before it was kept)", n
            if not tsc.get("vcpus"):
                return None, f"KVM's TSC offset was not read: {tsc.get('unavailable') or 'no vCPU listed'}", n
            n += 1
            for v in tsc["vcpus"]:
                now = (v["tsc_offset"], v["tsc_scaling_ratio"])
                if seen.setdefault(v["vcpu"], now) != now:
                    return None, (f"vCPU {v['vcpu']}'s TSC offset or ratio changed during the run ({seen[v['vcpu']]} "
                                  f"then {now}, kvm-stats/{phase}-r{rep}-{when}.json)"), n
    if not seen:
        return None, "the run has no KVM statistics samples", n
    return seen, None, n


def decide(samples: dict, fit: dict | None) -> tuple[dict | None, dict | None]:
    """(the clock to map with, or None to keep the fit; what was decided, for summary.json, or
    None when the run has no KVM statistics at all)."""
    if not samples:
        return None, None
    offsets, why, n = _offsets(samples)
    info = {"source": "sampled-fit", "samples_read": n, "why": why}
    if offsets is None:
        return None, info
    values = set(offsets.values())
    if len(values) != 1:
        info["why"] = f"the vCPUs' TSC offsets differ ({dict(sorted(offsets.items()))}): one mapping per run is built"
        return None, info
    ((tsc_offset, ratio),) = values
    info.update(tsc_offset=tsc_offset, tsc_scaling_ratio=ratio, vcpus=len(offsets))
    if ratio != 1.0:
        info["why"] = f"KVM scales this guest's TSC (ratio {ratio}): not taken as the clock yet"
        return None, info
    stated = -tsc_offset  # clock.json's convention: host - guest
    check = clock_check.constant_offset_check(fit, stated) if fit and fit.get("points") else None
    if check is None:
        info["why"] = "no sampled clock points to check KVM's offset against"
        return None, info
    info.update(upper_cycles=check["upper_cycles"], fit_late_cycles=check["late_cycles"],
                fit_offset_cycles=fit.get("offset_cycles"), margin_cycles=check["upper_cycles"] - stated)
    if not check["stated_ok"]:
        info["why"] = (f"KVM's offset is refuted by the sampled clock: host - guest {stated} cycles lies above "
                       f"{check['upper_cycles']:.0f}, the smallest host_after - guest_tsc of its brackets")
        return None, info
    info.update(source=METHOD, why=None)
    clock = {"method": METHOD, "offset_cycles": stated, "drift_ppm": 0.0, "ref_guest_tsc": 0, "points": [],
             "bound_max_cycles": 0.0, "bound_median_cycles": 0.0, "samples": n, "residual_cycles": None,
             "noise_floor_cycles": 0.0}
    return clock, info
