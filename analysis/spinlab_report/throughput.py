"""Workload throughput per phase: acquisitions of the run's throughput classes per second,
across repetitions (pure).

A snapshot's workload part names the program and counts its throughput classes' acquisitions
(`[workload] throughput-classes`), whatever the program: lockbench's user classes (its ops),
or the kernel classes kmix drives. The entry is lockbench's when there is one, else the only
(or, of several, the first by name) program's. Its ops_per_s is used as given; without it,
ops / duration_s. A workload the guest counts itself (a Linux guest's agent: kSpinlabWorkloadInformation)
has a "unit" ("hackbench runs") and no classes. The interval is Student t over repetitions (confidence.mean_ci); the change
is relative to the baseline phase's mean (idle-host by default). phases_throughput gives summary.json's "throughput"
of every phase.
"""
from .confidence import mean_ci

WORKLOAD, METRIC = "lockbench", "ops_per_s"
DEFAULT_METRIC = "lockbench ops/s"   # lockbench counted by its own classes: ops are acquisitions


def _entry(snap):
    """(program, its workload dict) of the snapshot, or (None, None)."""
    wl = snap.workload if isinstance(snap.workload, dict) else {}
    if isinstance(wl.get(WORKLOAD), dict):
        return WORKLOAD, wl[WORKLOAD]
    for name in sorted(wl):
        if isinstance(wl[name], dict):
            return name, wl[name]
    return None, None


def metric_name(snap) -> str | None:
    """What a snapshot's throughput counts: "lockbench ops/s" for lockbench counted by its user
    classes (as before the classes were written), else "<program> acquisitions/s (<classes>)"."""
    program, w = _entry(snap)
    if program is None:
        return None
    if isinstance(w.get("unit"), str) and w["unit"]:  # counted by the guest itself (a Linux guest's agent)
        return f"{program}: {w['unit']}/s"
    classes = [c for c in w.get("classes", []) if isinstance(c, str)] if isinstance(w.get("classes"), list) else []
    if program == WORKLOAD and classes in ([], ["user"]):
        return DEFAULT_METRIC
    return f"{program} acquisitions/s" + (f" ({', '.join(classes)})" if classes else "")


def run_metric(snaps) -> str:
    """The metric of a set of snapshots: the first named one (a run has one program)."""
    for s in snaps:
        m = metric_name(s)
        if m:
            return m
    return DEFAULT_METRIC


def rep_value(snap) -> float | None:
    _, w = _entry(snap)
    if w is None:
        return None
    v = w.get(METRIC)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    ops = w.get("ops")
    if isinstance(ops, (int, float)) and snap.duration_s:
        return float(ops) / snap.duration_s
    return None


def phase_throughput(snaps, confidence: float) -> dict:
    values = [v for v in (rep_value(s) for s in snaps) if v is not None]
    out = mean_ci(values, confidence)
    out["values"] = values
    return out


def pct_change(value: float | None, base: float | None) -> float | None:
    """Percentage change from base (a phase's mean from the baseline's); None when either is
    missing or base is 0."""
    if value is None or base is None or base == 0:
        return None
    return (value - base) / base * 100.0


def _r3(x):
    return None if x is None else round(float(x), 3)


def phases_throughput(snaps: dict, baseline: str | None, confidence: float) -> dict:
    """summary.json's "throughput" of each phase with snapshots (snaps: phase -> its snapshots, in
    the run's order): the run's metric, the mean with its interval, the values and the change from
    the baseline's mean, rounded to 3 decimals (but n)."""
    metric = run_metric([s for ss in snaps.values() for s in ss])
    tp = {p: phase_throughput(ss, confidence) for p, ss in snaps.items() if ss}
    base = tp.get(baseline, {}).get("mean") if baseline else None
    for t in tp.values():  # the change from the baseline's mean (None where not computable)
        t["change_vs_baseline_pct"] = pct_change(t.get("mean"), base)
    return {p: {"metric": metric} | {k: [_r3(x) for x in v] if k == "values" else v if k == "n" else _r3(v)
                                     for k, v in t.items()} for p, t in tp.items()}
