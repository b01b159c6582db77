"""KVM's per-vCPU counters per phase, beside the host timeline's off intervals.

Under KVM the runner keeps, per repetition, two samples of QMP `query-stats` (vcpu, kvm):
kvm-stats/<phase>-r<rep>-start.json just before the window opens and -end.json just after it
closes (written by spinlab-vm stats; analysis/README.md). Each counter is cumulative since the VM
started, so a pair gives what moved during the window and the end sample says whether a counter
ever moved on this host at all.

A counter that is 0 at the end of every repetition, on every vCPU, never moved since the VM
booted: this host's KVM does not keep it, or its cause never happened, and the samples cannot
tell which. It is listed as "not shown to be kept" rather than shown as zeros (on the build
machines' nested KVM, kvm_pvm, hypercalls, preemption_reported and the directed yields stay 0).
"""
import glob
import os
import re

from . import contract as c

DIR = "kvm-stats"
# What the report shows, in this order: what a reader of LHP asks KVM about.
SHOWN = ("exits", "halt_exits", "halt_wakeup", "hypercalls", "preemption_reported", "preemption_other",
         "directed_yield_attempted", "directed_yield_successful")
NAME = re.compile(r"(.+)-r(\d+)-(start|end)\.json")


def read_sample(path: str) -> dict:
    """One sample, checked (a ContractError names the file and the field)."""
    where = f"{DIR}/{os.path.basename(path)}"
    d = c.read_json(path)
    vcpus = c.need(d, "vcpus", list, where)
    c.need(d, "monotonic_ns", int, where)
    seen = set()
    for v in vcpus:
        i = c.need_count(v, "vcpu", where)
        if i in seen:
            raise c.ContractError(f"{where}: vCPU {i} is listed twice")
        seen.add(i)
        stats = c.need(v, "stats", dict, where)
        for k, n in stats.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise c.ContractError(f"{where}: vCPU {i}'s counter {k!r} must be a count, got {n!r}")
    if not vcpus and not isinstance(d.get("unavailable"), str):
        raise c.ContractError(f"{where}: no vCPU listed and no 'unavailable' saying why")
    if "tsc" in d:  # KVM's TSC offset per vCPU (kvm_clock.py); samples before it have none
        tsc = c.need(d, "tsc", dict, where)
        tv = c.need(tsc, "vcpus", list, f"{where} tsc")
        for v in tv:
            if not isinstance(v, dict):
                raise c.ContractError(f"{where}: tsc.vcpus entries must be objects, got {v!r}")
            c.need_count(v, "vcpu", f"{where} tsc")
            c.need(v, "tsc_offset", int, f"{where} tsc")
            r = c.need(v, "tsc_scaling_ratio", (int, float), f"{where} tsc")
            if not r > 0:
                raise c.ContractError(f"{where}: tsc vCPU {v['vcpu']}'s tsc_scaling_ratio must be positive, got {r!r}")
        if not tv and not isinstance(tsc.get("unavailable"), str):
            raise c.ContractError(f"{where}: tsc lists no vCPU and no 'unavailable' saying why")
    return d


def read_dir(path: str, problems: list) -> dict:
    """{(phase, rep): {"start": sample, "end": sample}} of the run's kvm-stats/ (empty when it has
    none); a file that does not read is a problem of the run and is left out."""
    out = {}
    for f in sorted(glob.glob(os.path.join(path, DIR, "*.json"))):
        m = NAME.fullmatch(os.path.basename(f))
        if not m:
            problems.append(f"{DIR}/{os.path.basename(f)}: not a KVM statistics name (<phase>-r<rep>-start|end.json) — left out")
            continue
        try:
            out.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = read_sample(f)
        except c.ContractError as e:
            problems.append(f"{e} — KVM's counters of this repetition are left out")
    return out


def _stats(sample: dict) -> dict:
    return {v["vcpu"]: v["stats"] for v in sample["vcpus"]}


def off_intervals(timeline, phase: str, rep: int) -> dict:
    """vCPU -> the timeline's off (and frozen) intervals in that repetition: the times the host
    took the vCPU thread off its CPU."""
    if timeline is None or timeline.empty:
        return {}
    t = timeline[(timeline["phase"] == phase) & (timeline["rep"] == rep) & timeline["state"].isin(c.OFF_STATES)]
    return {int(k): int(n) for k, n in t.groupby("vcpu").size().items()}


def summarize(samples: dict, timeline, phases: list) -> dict | None:
    """The summary.json entry: None when the run has no samples. Per phase, per vCPU, what each
    shown counter moved in the windows, per second of them, and the timeline's off intervals
    over the same repetitions; "not_kept": the shown counters still 0 at every end."""
    if not samples:
        return None
    why = sorted({s.get("unavailable") for pair in samples.values() for s in pair.values() if s.get("unavailable")})
    pairs = {k: p for k, p in samples.items() if "start" in p and "end" in p and p["start"]["vcpus"] and p["end"]["vcpus"]}
    ends = [_stats(p["end"]) for p in samples.values() if "end" in p and p["end"]["vcpus"]]
    kept = {name for e in ends for st in e.values() for name, n in st.items() if n}
    listed = {name for e in ends for st in e.values() for name in st}
    out = {"unavailable": why, "not_kept": [n for n in SHOWN if n in listed and n not in kept],
           "not_listed": [n for n in SHOWN if n not in listed] if ends else [], "phases": {}}
    for phase in phases:
        reps = sorted(r for (p, r) in pairs if p == phase)
        if not reps:
            continue
        seconds, rows = 0.0, {}
        for r in reps:
            a, b = _stats(pairs[(phase, r)]["start"]), _stats(pairs[(phase, r)]["end"])
            seconds += (pairs[(phase, r)]["end"]["monotonic_ns"] - pairs[(phase, r)]["start"]["monotonic_ns"]) / 1e9
            offs = off_intervals(timeline, phase, r)
            for v in sorted(set(a) & set(b)):
                row = rows.setdefault(v, {"vcpu": v, "moved": {n: 0 for n in SHOWN if n in b[v]},
                                          "timeline_off_intervals": 0 if timeline is not None else None})
                for n in row["moved"]:
                    row["moved"][n] += max(0, b[v].get(n, 0) - a[v].get(n, 0))
                if row["timeline_off_intervals"] is not None:
                    row["timeline_off_intervals"] += offs.get(v, 0)
        for row in rows.values():
            row["per_s"] = {n: (k / seconds if seconds > 0 else None) for n, k in row["moved"].items()}
        out["phases"][phase] = {"repetitions": len(reps), "seconds": seconds, "vcpus": list(rows.values())}
    return out


def section(summary: dict | None) -> list:
    """The report's blocks (report_doc's form); none for a run without samples (TCG)."""
    if summary is None:
        return []
    blocks = [("h2", "KVM's per-vCPU counters")]
    if not summary["phases"]:
        blocks.append(("p", "Not recorded: " + ("; ".join(summary["unavailable"]) or "no repetition has both samples") + "."))
        return blocks
    blocks.append(("p", "QMP query-stats (provider kvm) just before each repetition's window and just after it, per "
                        "vCPU: what each counter moved, per second of those windows, beside the host timeline's off "
                        "intervals (the times the host took that vCPU's thread off its CPU) in the same repetitions."))
    shown = [n for n in SHOWN if n not in summary["not_kept"] and n not in summary["not_listed"]]
    header = ["phase", "vCPU"] + [f"{n}/s" for n in shown] + ["timeline off intervals"]
    rows = []
    for phase, p in summary["phases"].items():
        for v in p["vcpus"]:
            rows.append([phase, str(v["vcpu"])] + [
                "—" if v["per_s"].get(n) is None else f"{v['per_s'][n]:,.1f}" for n in shown] +
                ["—" if v["timeline_off_intervals"] is None else f"{v['timeline_off_intervals']:,}"])
    blocks.append(("table", header, rows))
    if summary["not_kept"]:
        blocks.append(("p", "Not shown to be kept by this host's KVM: " + ", ".join(summary["not_kept"]) +
                            ". Each was 0 since the VM started, on every vCPU, at the end of every repetition: "
                            "KVM does not count it here, or its cause never happened; the samples cannot tell "
                            "which, so no zeros are shown for them."))
    if summary["not_listed"]:
        blocks.append(("p", "Not offered by this host's KVM (query-stats does not list them): " +
                            ", ".join(summary["not_listed"]) + "."))
    return blocks
