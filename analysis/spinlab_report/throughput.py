"""Workload throughput per phase: lockbench operations per second, across repetitions (pure).

A snapshot's workload.lockbench.ops_per_s is used as given; without it, ops / duration_s.
The interval is Student t over repetitions (confidence.mean_ci); the change is relative to
the baseline phase's mean (idle-host by default).
"""
from .confidence import mean_ci, pct_change

WORKLOAD, METRIC = "lockbench", "ops_per_s"


def rep_value(snap) -> float | None:
    w = snap.workload.get(WORKLOAD)
    if not isinstance(w, dict):
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


def with_change(per_phase: dict, baseline: str | None) -> dict:
    """Add change_vs_baseline_pct to each phase's throughput dict (None where not computable)."""
    base = per_phase.get(baseline, {}).get("mean") if baseline else None
    for t in per_phase.values():
        t["change_vs_baseline_pct"] = pct_change(t.get("mean"), base)
    return per_phase
