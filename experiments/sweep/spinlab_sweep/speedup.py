"""The speedup table, in the form of Ouyang and Lange (VEE'13, "Preemptable ticket spinlocks"):
each lock's throughput over the ticket lock's, per overcommit level and host condition. (pure)

A sweep gets the table when it has a vm.lock axis with `ticket` among its values. Each cell is
compared with the ticket cell of the same other axis values (vm.cpus and the like), phase by
phase. Overcommit is the cell's vCPUs over its host's CPUs (meta.json: vcpus, host.cpus); a
pinned run says so in its pinning and is not corrected for.

The speedup is the ratio of geometric means of the repetitions' throughputs (lockbench ops/s),
with the Welch t interval of the difference of the logs and its two-sided p-value
(spinlab_report.confidence.log_ratio, the verdict's test against the baseline). Beside it, per
cell, what a mitigation study reads beside the speedup: the long waits behind a preempted holder per
second (the verdict's lhp_spin.waits_per_second, mean and interval) and the spin cycles per
acquisition of the throughput classes (wait cycles summed over acquisitions, each repetition).
"""
from .report_lib import log_ratio

BASELINE = "ticket"
LOCK_AXIS = "vm.lock"
CPUS_AXIS = "vm.cpus"

# The paper's headline figures, shown beside ours (Ouyang and Lange, VEE'13, section 5: the
# average speedup of the preemptable ticket lock over the ticket lock across their benchmarks
# and overcommit levels).
PAPER = [("preemptable ticket over ticket, non-paravirtual VMM (average)", 5.32),
         ("preemptable ticket over ticket, paravirtual VMM (average)", 7.91)]


def applies(plan: dict) -> bool:
    """The sweep has a vm.lock axis with the ticket lock among its values."""
    return any(a["key"] == LOCK_AXIS and BASELINE in a["values"] for a in plan["axes"])


def overcommit(cell_meta: dict | None) -> float | None:
    """vCPUs per host CPU of a cell's run (None without its meta.json)."""
    if not cell_meta:
        return None
    vcpus, host = cell_meta.get("vcpus"), (cell_meta.get("host") or {}).get("cpus")
    if not isinstance(vcpus, int) or not isinstance(host, int) or host <= 0:
        return None
    return vcpus / host


def _others(values: dict) -> tuple:
    return tuple((k, v) for k, v in values.items() if k != LOCK_AXIS)


def table(plan: dict, rows: list, confidence: float = 0.95) -> list:
    """One entry per (other axis values, phase, lock other than ticket) where both cells have
    throughputs: {others, overcommit, phase, lock, speedup {ratio, low, high, p, n, n_base},
    lhp_waits_per_s, spin_per_acquisition, and the same two of the ticket cell}. Sorted by
    overcommit, then phase order, then lock order."""
    if not applies(plan):
        return []
    locks = next(a["values"] for a in plan["axes"] if a["key"] == LOCK_AXIS)
    base = {(_others(r["values"])): r for r in rows if r["values"].get(LOCK_AXIS) == BASELINE}
    phases = []
    for r in rows:
        phases += [p for p in r.get("reps", {}) if p not in phases]
    out = []
    for r in rows:
        lock = r["values"].get(LOCK_AXIS)
        b = base.get(_others(r["values"]))
        if lock == BASELINE or b is None:
            continue
        for phase in phases:
            mine, theirs = r.get("reps", {}).get(phase), b.get("reps", {}).get(phase)
            if not mine or not theirs:
                continue
            xs, bs = mine["throughput"], theirs["throughput"]
            if not xs or not bs or min(xs) <= 0 or min(bs) <= 0:
                continue
            out.append({"others": dict(_others(r["values"])), "overcommit": overcommit(r.get("meta")),
                        "phase": phase, "lock": lock, "cell": r["cell"], "base_cell": b["cell"],
                        "speedup": log_ratio(xs, bs, confidence),
                        "lhp_waits_per_s": mine.get("lhp_waits_per_s"),
                        "spin_per_acquisition": mine.get("spin_per_acquisition"),
                        "base_lhp_waits_per_s": theirs.get("lhp_waits_per_s"),
                        "base_spin_per_acquisition": theirs.get("spin_per_acquisition")})
    order = {p: i for i, p in enumerate(phases)}
    out.sort(key=lambda e: (e["overcommit"] if e["overcommit"] is not None else float("inf"),
                            sorted(e["others"].items()), order[e["phase"]], locks.index(e["lock"])))
    return out


def ratio_text(s: dict) -> str:
    """'3.1x [2.4, 4.0]' (the interval when known), or '' for no ratio."""
    if not s or s.get("ratio") is None:
        return ""
    text = f"{s['ratio']:.2f}x"
    if s.get("low") is not None and s.get("high") is not None:
        text += f" [{s['low']:.2f}, {s['high']:.2f}]"
    return text


def _rate(r: dict | None) -> tuple:
    """(mean, low, high) of a verdict rate or of mean_ci's dict; Nones when absent."""
    r = r or {}
    return r.get("mean"), r.get("low"), r.get("high")


def _mean(values: list):
    return sum(values) / len(values) if values else None


CSV_FIELDS = ["overcommit", "phase", "lock", "others", "speedup", "speedup_low", "speedup_high", "p",
              "repetitions", "base_repetitions", "lhp_waits_per_s", "lhp_waits_per_s_low", "lhp_waits_per_s_high",
              "base_lhp_waits_per_s", "spin_per_acquisition", "base_spin_per_acquisition", "cell", "base_cell"]


def write_csv(path: str, entries: list) -> None:
    """speedup.csv: one line per table entry (spin per acquisition: the repetitions' mean)."""
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for e in entries:
            s = e["speedup"]
            lw = _rate(e["lhp_waits_per_s"])
            line = [e["overcommit"], e["phase"], e["lock"], ";".join(f"{k}={v}" for k, v in e["others"].items()),
                    s.get("ratio"), s.get("low"), s.get("high"), s.get("p"), s.get("n"), s.get("n_base"),
                    *lw, _rate(e["base_lhp_waits_per_s"])[0], _mean(e["spin_per_acquisition"] or []),
                    _mean(e["base_spin_per_acquisition"] or []), e["cell"], e["base_cell"]]
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in line])
