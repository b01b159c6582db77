"""The one place the sweep reads results: spinlab_report's public API (analysis/README.md, "The
Python API"), nothing of its inside.

spinlab_report is found the way a user's Python finds it: installed, through the spinlab.pth that
`make install` writes; otherwise through PYTHONPATH, which spinlab-sweep sets to the analysis folder
beside it (the source tree's analysis/, or share/spinlab/analysis) before anything is imported.
"""
import configparser
import json
import os

import spinlab_report as report
from spinlab_report import LONG_K, ContractError, count_at_or_above, log_ratio  # noqa: F401 (the sweep's)

# The paravirtual lock's per-CPU counters (lock=pvqspin) in a snapshot's cpus[]: halts of a
# waiter's vCPU and kicks of a halted one by the releaser.
PV_COUNTERS = ("pv_halts", "pv_kicks")


def _throughput_prefixes(spec_text: str | None) -> tuple:
    """[workload] throughput-classes of the run's spec.ini (default user: lockbench's classes)."""
    spec = configparser.ConfigParser(interpolation=None)
    try:
        spec.read_string(spec_text or "")
        value = spec.get("workload", "throughput-classes", fallback="user")
    except configparser.Error:
        value = "user"
    return tuple(p.strip() for p in value.split(",") if p.strip()) or ("user",)


def _spin_per_acquisition(snap, prefixes: tuple) -> float | None:
    """Wait cycles summed over the acquisitions of the throughput classes, one repetition."""
    cycles = acquisitions = 0
    for st in snap.stats:
        if st.lock_class.startswith(prefixes):
            cycles += int(st.counts.get("wait_cycles_sum") or 0)
            acquisitions += st.acquisitions
    return cycles / acquisitions if acquisitions else None


def _pv_count(cpu: dict, key: str) -> int | None:
    """One CPU's pv counter: a field of the CPU, or of a dict inside it (say "pv"), or summed
    over its classes; None when the snapshot has none (a lock that does not halt)."""
    if isinstance(cpu.get(key), int):
        return cpu[key]
    for v in cpu.values():
        if isinstance(v, dict) and isinstance(v.get(key), int):
            return v[key]
    found = [d[key] for d in (cpu.get("classes") or {}).values() if isinstance(d, dict) and isinstance(d.get(key), int)]
    return sum(found) if found else None


def pv_rates(run_path: str, snap) -> dict:
    """pv_halts and pv_kicks per second of one repetition, summed over its CPUs; None where
    the snapshot has no such counter or no duration."""
    try:
        with open(os.path.join(run_path, snap.name)) as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return {k: None for k in PV_COUNTERS}
    out = {}
    for key in PV_COUNTERS:
        counts = [_pv_count(c, key) for c in raw.get("cpus", []) if isinstance(c, dict)]
        counts = [c for c in counts if c is not None]
        out[key] = sum(counts) / snap.duration_s if counts and snap.duration_s else None
    return out


def holder_off_spin_share(run, snap, threshold: int) -> float | None:
    """Of the cycles spun in one repetition (every class's wait cycles), the share spun in long
    waits behind a preempted holder (the verdict's holder_off_cycles); None when its long waits
    could not be attributed or nothing was spun."""
    total = sum(int(st.counts.get("wait_cycles_sum") or 0) for st in snap.stats)
    off = report.rep_verdict(run, snap, threshold)["holder_off_cycles"]
    if off is None or total <= 0:
        return None
    return min(float(off) / total, 1.0)


def rep_figures(run_dir: str, k: int) -> dict:
    """Per phase, per repetition: the share of timed contended waits of 2^k cycles or more
    (shares), the throughput (lockbench ops/s) and the spin cycles per acquisition of the
    throughput classes. {} when the run cannot be read."""
    try:
        run = report.load_run(run_dir)
    except (ContractError, OSError, ValueError):
        return {}
    prefixes = _throughput_prefixes(run.spec_text)
    out = {}
    for phase in run.phases:
        snaps = run.snaps(phase)
        shares = []
        for hist in report.rep_hists(snaps):
            total = int(hist.sum())
            if total:
                shares.append(count_at_or_above(hist, k) / total)
        out[phase] = {"shares": shares,
                      "throughput": [v for v in (report.rep_throughput(s) for s in snaps) if v is not None],
                      "spin_per_acquisition": [v for v in (_spin_per_acquisition(s, prefixes) for s in snaps)
                                               if v is not None]}
        pv = [pv_rates(run.path, s) for s in snaps]
        for key in PV_COUNTERS:
            out[phase][f"{key}_per_s"] = [r[key] for r in pv if r[key] is not None]
        out[phase]["holder_off_spin_share"] = [
            v for v in (holder_off_spin_share(run, s, report.LONG_WAIT_THRESHOLD) for s in snaps) if v is not None]
    return out
