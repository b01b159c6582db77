"""Figure: CDF of lock hold cycles (acquisition to release) per phase, overlaid.

A preempted holder stretches hold times exactly as it stretches waits, so this is the other
half of the LHP picture: the tail of this CDF is the time others may have spun.
"""
from . import aggregate
from .buckets import merge
from .cdf import cdf_points
from .plotting import Figure, color, k_range, log2_axis, plt, save

NAME, TITLE = "hold_cdf", "CDF of lock hold cycles"


def make(run, outdir: str) -> Figure:
    holds = {p: merge(aggregate.rep_hists(run.snaps(p), "hold")) for p in run.phases if run.snaps(p)}
    holds = {p: h for p, h in holds.items() if h.sum()}
    if not holds:
        return Figure(NAME, TITLE, missing="no hold times were recorded in any phase")
    lo, hi = k_range(list(holds.values()))
    fig, ax = plt.subplots(figsize=(7, 4))
    for phase, h in holds.items():
        ax.plot(*cdf_points(h), color=color(run.phases, phase), lw=2, label=f"{phase} ({int(h.sum())} holds)")
    log2_axis(ax, lo, hi, label="hold (TSC cycles)")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("share of holds \u2264 x")
    ax.set_title(TITLE)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE, "All repetitions, CPUs and lock classes pooled.")
