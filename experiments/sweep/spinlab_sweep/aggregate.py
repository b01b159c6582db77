"""Collect every cell's key figures into one table (sweep.csv): one row per cell.

A cell's figures come from its report's summary.json (analysis/README.md) and, for the spread
between repetitions of the long-wait share, from its snapshots through spinlab_report's loader.
A cell that did not complete is still a row: its state says so and its figures are empty.
Each row also keeps, for the speedup table (speedup.py), its run's meta.json (meta) and per
phase the repetitions' throughputs and spin cycles per acquisition and the verdict's long waits
behind a preempted holder per second (reps).
"""
import csv
import json
import os

from . import layout
from .cell import run_state
from .report_lib import LONG_K, rep_figures, report

THRESHOLD_K = LONG_K  # waits of 2^20 cycles and more: the report's long-wait row (buckets.LONG_K)


def phase_figures(summary_phase: dict, rep_shares: list) -> dict:
    """The figures of one phase of one cell (pure)."""
    thr = summary_phase.get("throughput") or {}
    lhp = summary_phase.get("lhp") or {}
    return {
        "waits_ge_2^20": summary_phase.get(f"waits_ge_2^{THRESHOLD_K}"),
        "share_waits_ge_2^20": summary_phase.get(f"share_waits_ge_2^{THRESHOLD_K}"),
        "share_min": round(min(rep_shares), 6) if rep_shares else None,
        "share_max": round(max(rep_shares), 6) if rep_shares else None,
        "lhp_share": lhp.get("share"),
        "throughput": thr.get("mean"),
        "throughput_low": thr.get("low"),
        "throughput_high": thr.get("high"),
        "throughput_change_pct": thr.get("change_vs_baseline_pct"),
    }


MIX = ("holder-preempted", "waiter-preempted", "both")


def cause_mix(causes: dict | None) -> dict | None:
    """The verdict's long waits by cause as shares of the long waits whose preemption side is
    known (holder-preempted, waiter-preempted, both, neither): {cause: share} for the three
    preempted causes and "n" (those waits); None without causes or with none decided."""
    if not isinstance(causes, dict):
        return None
    n = sum(int(causes.get(c) or 0) for c in MIX + ("neither",))
    if n == 0:
        return None
    return {c: int(causes.get(c) or 0) / n for c in MIX} | {"n": n}


def cell_state(root: str, cell_id: str) -> str:
    if os.path.exists(layout.done_marker(root, cell_id)):
        return "complete"
    return run_state(layout.cell_dir(root, cell_id))


def cell_row(root: str, cell_id: str, cell: dict) -> dict:
    """One cell: its axis values, state, and figures per phase ({} when it has no report)."""
    row = {"cell": cell_id, "values": cell["values"], "state": cell_state(root, cell_id), "phases": {},
           "meta": _read_json(os.path.join(layout.cell_dir(root, cell_id), "meta.json")), "reps": {}}
    summary = _read_json(os.path.join(layout.cell_dir(root, cell_id), "summary.json"))
    if summary is None:
        return row
    reps = rep_figures(layout.cell_dir(root, cell_id), THRESHOLD_K)
    verdict = (summary.get("verdict") or {}).get("phases") or {}
    for phase, figures in summary.get("phases", {}).items():
        if figures.get("status") == "missing":
            continue
        mine = reps.get(phase, {})
        row["phases"][phase] = phase_figures(figures, mine.get("shares", []))
        row["reps"][phase] = {"throughput": mine.get("throughput", []),
                              "spin_per_acquisition": mine.get("spin_per_acquisition", []),
                              "lhp_waits_per_s": ((verdict.get(phase) or {}).get("lhp_spin") or {}).get("waits_per_second"),
                              "holder_off_spin_share": mine.get("holder_off_spin_share", []),
                              "pv_halts_per_s": mine.get("pv_halts_per_s", []),
                              "pv_kicks_per_s": mine.get("pv_kicks_per_s", []),
                              "causes": cause_mix((verdict.get(phase) or {}).get("causes"))}
    return row


def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def collect(root: str) -> tuple[dict, list]:
    """The plan and a row per cell, the cells read side by side (each loads and attributes its
    run's repetitions again: 28 s in one process for the 48 cells of the mitigation study)."""
    plan = layout.read_plan(root)
    cells = list(plan["cells"].items())
    return plan, report.forked_map(lambda c: cell_row(root, c[0], c[1]), cells)


def phases_of(rows: list) -> list:
    seen = []
    for r in rows:
        for p in r["phases"]:
            if p not in seen:
                seen.append(p)
    return seen


def write_csv(path: str, plan: dict, rows: list) -> None:
    axes = [a["key"] for a in plan["axes"]]
    phases = phases_of(rows)
    fields = list(phase_figures({}, []).keys())
    header = ["cell", *axes, "state"] + [f"{p}:{f}" for p in phases for f in fields]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            line = [r["cell"], *(r["values"][a] for a in axes), r["state"]]
            for p in phases:
                figs = r["phases"].get(p, {})
                line += ["" if figs.get(k) is None else figs[k] for k in fields]
            w.writerow(line)
