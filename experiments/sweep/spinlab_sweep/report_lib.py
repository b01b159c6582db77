"""The one place the sweep reaches into spinlab_report (analysis/): its results loader.

In a source tree it sits in analysis/ at the top; installed, in share/spinlab/analysis beside
share/spinlab/sweep.
"""
import os
import sys

try:
    import spinlab_report  # noqa: F401
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "..", "..", "..", "analysis"), os.path.join(here, "..", "..", "analysis")):
        if os.path.isdir(os.path.join(d, "spinlab_report")):
            sys.path.insert(0, d)
            break

import configparser  # noqa: E402

from spinlab_report.aggregate import rep_hists  # noqa: E402
from spinlab_report.buckets import LONG_K, count_at_or_above  # noqa: E402,F401
from spinlab_report.confidence import log_ratio  # noqa: E402,F401
from spinlab_report.contract import ContractError  # noqa: E402
from spinlab_report.reader import load_run  # noqa: E402
from spinlab_report.throughput import rep_value  # noqa: E402


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


def rep_figures(run_dir: str, k: int) -> dict:
    """Per phase, per repetition: the share of timed contended waits of 2^k cycles or more
    (shares), the throughput (lockbench ops/s) and the spin cycles per acquisition of the
    throughput classes. {} when the run cannot be read."""
    try:
        run = load_run(run_dir)
    except (ContractError, OSError, ValueError):
        return {}
    prefixes = _throughput_prefixes(run.spec_text)
    out = {}
    for phase in run.phases:
        snaps = run.snaps(phase)
        shares = []
        for hist in rep_hists(snaps):
            total = int(hist.sum())
            if total:
                shares.append(count_at_or_above(hist, k) / total)
        out[phase] = {"shares": shares,
                      "throughput": [v for v in (rep_value(s) for s in snaps) if v is not None],
                      "spin_per_acquisition": [v for v in (_spin_per_acquisition(s, prefixes) for s in snaps)
                                               if v is not None]}
    return out
