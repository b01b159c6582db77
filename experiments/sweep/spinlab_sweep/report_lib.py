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

from spinlab_report.aggregate import rep_hists  # noqa: E402
from spinlab_report.buckets import count_at_or_above  # noqa: E402
from spinlab_report.contract import ContractError  # noqa: E402
from spinlab_report.load import load_run  # noqa: E402


def long_wait_shares(run_dir: str, k: int) -> dict:
    """Per phase, each repetition's share of timed contended waits of 2^k cycles or more."""
    try:
        run = load_run(run_dir)
    except (ContractError, OSError, ValueError):
        return {}
    out = {}
    for phase in run.phases:
        shares = []
        for hist in rep_hists(run.snaps(phase)):
            total = int(hist.sum())
            if total:
                shares.append(count_at_or_above(hist, k) / total)
        out[phase] = shares
    return out
