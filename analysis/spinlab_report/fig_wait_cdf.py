"""Figure: CDF of contended wait cycles, all phases overlaid (the original experiment's two
CDFs, idle host and host load, on one plot).

Each phase's line is the CDF of its pooled repetitions; the shaded band spans the lowest and
highest CDF of the single repetitions at every wait length, so a reader sees how much the
repetitions disagree. Overflows are not timed and not in the CDF.
"""
import numpy as np

from . import aggregate
from .buckets import merge
from .cdf import cdf_at, cdf_points
from .plotting import Figure, color, k_range, log2_axis, plt, save

NAME, TITLE = "wait_cdf", "CDF of contended wait cycles, phases overlaid"


def cdf_band(rep_hists, grid) -> tuple[np.ndarray, np.ndarray] | None:
    """(min, max) over repetitions of the CDF on `grid` (cycles); empty repetitions are skipped."""
    curves = [c for c in (cdf_at(h, grid) for h in rep_hists) if c is not None]
    if not curves:
        return None
    stack = np.vstack(curves)
    return stack.min(axis=0), stack.max(axis=0)


def phase_curves(run) -> dict:
    """phase -> (rep histograms, pooled histogram) for phases that have timed waits."""
    out = {}
    for phase in run.phases:
        reps = aggregate.rep_hists(run.snaps(phase))
        pooled = merge(reps)
        if pooled.sum():
            out[phase] = (reps, pooled)
    return out


def make(run, outdir: str) -> Figure:
    curves = phase_curves(run)
    if not curves:
        return Figure(NAME, TITLE, missing="no phase has timed contended waits: every wait histogram is empty")
    lo, hi = k_range([p for _, p in curves.values()])
    grid = np.exp2(np.linspace(lo, hi, 400))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for phase, (reps, pooled) in curves.items():
        c = color(run.phases, phase)
        x, y = cdf_points(pooled)
        ax.plot(x, y, color=c, lw=2, label=f"{phase} ({len(reps)} reps, {int(pooled.sum())} waits)")
        band = cdf_band(reps, grid)
        if band is not None and len(reps) > 1:
            ax.fill_between(grid, band[0], band[1], color=c, alpha=0.2, lw=0)
    log2_axis(ax, lo, hi)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("share of contended waits \u2264 x")
    ax.set_title(TITLE)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE,
                "Line: all repetitions pooled; band: range of the single repetitions. "
                "Linear in log2(cycles) within each bucket.")
