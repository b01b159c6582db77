"""Figures for --compare: several runs' wait CCDFs and CDFs per phase, and their throughput.

Colour is the run (not the phase) here, so the eye follows one run across the panels.
"""
import numpy as np

from . import aggregate
from .buckets import merge
from .cdf import cdf_points
from .fig_wait_ccdf import draw
from .plotting import PALETTE, Figure, k_range, log10_axis, log2_axis, plt, save

CDF_NAME, CDF_TITLE = "compare_wait_cdf", "CDF of contended wait cycles, runs compared per phase"
CCDF_NAME, CCDF_TITLE = "compare_wait_ccdf", "Share of contended waits longer than x, runs overlaid per phase"
TP_NAME, TP_TITLE = "compare_throughput", "lockbench throughput, runs compared per phase"


def phase_union(runs) -> list:
    out = []
    for r in runs:
        out += [p for p in r.phases if p not in out]
    return out


def make_cdf(runs, labels, outdir: str) -> Figure:
    phases = phase_union(runs)
    pooled = {(i, p): merge(aggregate.rep_hists(r.snaps(p))) for i, r in enumerate(runs) for p in phases}
    rng = k_range(list(pooled.values()))
    if rng is None:
        return Figure(CDF_NAME, CDF_TITLE, missing="no run has timed contended waits")
    fig, axes = plt.subplots(1, len(phases), figsize=(3.8 * len(phases), 3.8), sharey=True, squeeze=False)
    for ax, phase in zip(axes[0], phases):
        ax.set_title(phase)
        log2_axis(ax, *rng)
        ax.set_ylim(0, 1.02)
        for i, label in enumerate(labels):
            pts = cdf_points(pooled[(i, phase)])
            if pts is not None:
                ax.plot(*pts, color=PALETTE[i % len(PALETTE)], lw=2, label=label)
            else:
                ax.plot([], [], color=PALETTE[i % len(PALETTE)], ls=":", label=f"{label} (no data)")
        ax.legend(loc="lower right", fontsize=7)
    axes[0][0].set_ylabel("share of contended waits \u2264 x")
    fig.suptitle(CDF_TITLE)
    fig.tight_layout()
    return save(fig, outdir, CDF_NAME, CDF_TITLE, "One colour per run; repetitions pooled.")


def make_ccdf(runs, labels, outdir: str) -> Figure:
    """One panel per phase, a line per run (repetitions pooled) with its repetitions' band."""
    phases = phase_union(runs)
    reps = {(i, p): aggregate.rep_hists(r.snaps(p)) for i, r in enumerate(runs) for p in phases}
    rng = k_range([merge(h) for h in reps.values()])
    if rng is None:
        return Figure(CCDF_NAME, CCDF_TITLE, missing="no run has timed contended waits")
    fig, axes = plt.subplots(1, len(phases), figsize=(4.2 * len(phases), 4), sharey=True, squeeze=False)
    floor = 1.0
    for ax, phase in zip(axes[0], phases):
        ax.set_title(phase)
        curves = {labels[i]: (reps[(i, phase)], merge(reps[(i, phase)])) for i in range(len(runs))
                  if merge(reps[(i, phase)]).sum()}
        floor = min(floor, draw(ax, labels, curves, *rng,
                                lambda label, rs, pooled: f"{label} ({int(pooled.sum())} waits)"))
        log2_axis(ax, *rng)
        log10_axis(ax, "y")
        ax.legend(loc="lower left", fontsize=7)
    axes[0][0].set_ylim(floor, 1.5)
    axes[0][0].set_ylabel("share of contended waits > x")
    fig.suptitle(CCDF_TITLE)
    fig.tight_layout()
    return save(fig, outdir, CCDF_NAME, CCDF_TITLE, "One colour per run; line: repetitions pooled; band: range of "
                "single repetitions. Log y shows the tail.")


def make_throughput(summaries, labels, outdir: str) -> Figure:
    phases = []
    for s in summaries:
        phases += [p for p in s["phases"] if p not in phases]
    w = 0.8 / len(summaries)
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(phases), 3.6))
    labelled = set()
    for i, (s, label) in enumerate(zip(summaries, labels)):
        for j, p in enumerate(phases):
            t = s["phases"].get(p, {}).get("throughput") or {}
            if not t.get("n"):
                continue
            first = label not in labelled
            labelled.add(label)
            err = None if t["low"] is None else [[t["mean"] - t["low"]], [t["high"] - t["mean"]]]
            ax.bar(j + i * w, t["mean"], width=w, yerr=err, capsize=4, color=PALETTE[i % len(PALETTE)],
                   label=label if first else None)
    if not labelled:
        plt.close(fig)
        return Figure(TP_NAME, TP_TITLE, missing="no run reported lockbench operations per second")
    ax.set_xticks(np.arange(len(phases)) + w * (len(summaries) - 1) / 2, phases)
    ax.set_ylabel("operations per second")
    ax.set_ylim(bottom=0)
    ax.set_title(TP_TITLE)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, outdir, TP_NAME, TP_TITLE, "Bars: mean over repetitions; whiskers: Student t interval.")
