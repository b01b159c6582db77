"""What a clock.json's own brackets say about a constant offset, and a stated offset against them.

Each point of clock.json is one guest TSC publication bracketed by two host TSC reads. Causality
gives every point one hard side: the guest read its TSC before the publication became visible,
so offset <= host_after - guest_tsc. The other side, offset >= host_before - guest_tsc, holds
only if the publication was not late (the guest's rdtsc-to-store time is negligible). Where the
offset is constant (KVM: its debugfs tsc-offset reads the same all run; not QEMU TCG, whose
offset steps), the smallest upper side and the largest lower side must leave room for one
offset; when they do not, publications were late by at least the difference, and the sampled
fit's offset carries that lateness. An offset stated elsewhere (KVM's) is refuted if it exceeds
the smallest upper side. collector/README.md, "Under KVM", says what was measured with it.
"""


def brackets(clock: dict) -> list[tuple[int, float, float]]:
    """(guest_tsc, host_before - guest_tsc, host_after - guest_tsc) per point. A point's half
    width is half its bracket plus noise_floor_cycles (clock.json's contract)."""
    floor = float(clock.get("noise_floor_cycles", 0.0))
    out = []
    for i, p in enumerate(clock.get("points") or []):
        if len(p) != 3:
            raise ValueError(f"clock.json points[{i}]: expected [guest_tsc, offset, half_width], got {p!r}")
        guest, offset, half = p
        half_bracket = float(half) - floor
        if half_bracket < 0:
            raise ValueError(f"clock.json points[{i}]: half width {half} is below noise_floor_cycles {floor}")
        out.append((int(guest), offset - half_bracket, offset + half_bracket))
    return out


def constant_offset_check(clock: dict, stated_offset: int | None = None) -> dict | None:
    """None without points. Otherwise:
    upper_cycles: the smallest host_after - guest_tsc (no offset can be larger);
    lower_cycles: the largest host_before - guest_tsc (a lower bound only if nothing was late);
    late_cycles: lower - upper when positive (publications were late by at least this), else 0;
    consistent: late_cycles == 0;
    with stated_offset, stated_ok: stated_offset <= upper_cycles (causality allows it)."""
    b = brackets(clock)
    if not b:
        return None
    upper = min(u for _, _, u in b)
    lower = max(lo for _, lo, _ in b)
    late = max(0.0, lower - upper)
    out = {"points": len(b), "upper_cycles": upper, "lower_cycles": lower, "late_cycles": late,
           "consistent": late == 0.0}
    if stated_offset is not None:
        out["stated_offset"] = int(stated_offset)
        out["stated_ok"] = stated_offset <= upper
    return out
