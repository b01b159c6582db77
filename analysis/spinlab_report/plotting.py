"""Shared figure plumbing: the Agg backend, print-readable defaults, log2 axes, PNG+SVG output.

Every fig_*.py returns a Figure; when there is nothing to draw it returns one with `missing`
set to the reason, so the report states it instead of failing.
"""
import math
import os
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")  # no display: figures are files
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from .lhp import HOLDER_BLOCKED, POSSIBLY_PREEMPTED, UNCERTAIN  # noqa: E402
from .names import LHP_CLASS as L  # noqa: E402

plt.rcParams.update({"font.size": 9, "axes.grid": True, "grid.alpha": 0.3, "savefig.dpi": 120,
                     "svg.fonttype": "none", "svg.hashsalt": "spinlab", "figure.autolayout": False})

# Long waits by LHP class (lhp.py): a preempted holder in warm colours, a running one in blue.
CLASS_COLORS = {L.kHolderPreempted: "#d62728", L.kBoth: "#9467bd", L.kWaiterPreempted: "#ff7f0e",
                L.kNeither: "#1f77b4", HOLDER_BLOCKED: "#8c564b", POSSIBLY_PREEMPTED: "#e377c2",
                UNCERTAIN: "#bcbd22", L.kUnknown: "#7f7f7f"}
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


@dataclass
class Figure:
    name: str
    title: str
    caption: str = ""
    png: str | None = None
    svg: str | None = None
    missing: str | None = None  # why the figure was not drawn


def color(phases: list, phase: str) -> str:
    """One colour per phase, stable across all figures of a report (idle-host blue, then red...)."""
    return PALETTE[phases.index(phase) % len(PALETTE)] if phase in phases else "#555555"


ROWS_MAX_INCHES = 10.0  # figures with a row per CPU stop growing here (64 vCPUs: 0.16 in, ~19 px a row)


def rows_height(rows: int, per_row: float, base: float) -> float:
    """Height in inches of a figure with one row per CPU: base + per_row each, the rows together at
    most ROWS_MAX_INCHES (a 64-CPU figure would otherwise be ~40 inches tall and slow to write)."""
    return base + min(per_row * rows, ROWS_MAX_INCHES)


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def power_label(base: int, k: int) -> str:
    """base^k as plain text with superscript digits ("2²⁰", "10⁻³"). Matplotlib's mathtext
    ("$2^{20}$") looks the same but parses every label with pyparsing: it was most of a report's
    drawing time (321 labels, about half of the figures' cost under cProfile)."""
    return f"{base}{str(k).translate(_SUPERSCRIPT)}"


def log10_axis(ax, which: str = "y"):
    """Log10 scale whose decade ticks are written 10ᵏ in plain text (see power_label); ticks
    between decades get no label."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis

    def label(v, _):
        if v <= 0:
            return ""
        k = round(math.log10(v))
        return power_label(10, k) if math.isclose(v, 10.0 ** k, rel_tol=1e-9) else ""
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def log2_axis(ax, lo_k: int, hi_k: int, which: str = "x", label: str = "wait (TSC cycles)"):
    """Log2 scale from 2^lo_k to 2^hi_k with ticks written 2ᵏ (at most ~12 of them)."""
    step = max(1, (hi_k - lo_k + 11) // 12)
    ticks = [2.0 ** k for k in range(lo_k, hi_k + 1, step)]
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=2)
    (ax.set_xlim if which == "x" else ax.set_ylim)(2.0 ** lo_k, 2.0 ** hi_k)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: power_label(2, round(math.log2(v)))))
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(label)


def k_range(hists) -> tuple[int, int] | None:
    """Bucket range [first, last+1] covering all non-empty histograms, for a shared axis."""
    idx = [np.flatnonzero(h) for h in hists]
    idx = [i for i in idx if i.size]
    if not idx:
        return None
    return min(int(i[0]) for i in idx), max(int(i[-1]) for i in idx) + 1


def save(fig, outdir: str, name: str, title: str, caption: str) -> Figure:
    os.makedirs(outdir, exist_ok=True)
    png, svg = os.path.join(outdir, name + ".png"), os.path.join(outdir, name + ".svg")
    fig.savefig(png, metadata={"Software": None})
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
    return Figure(name, title, caption, png, svg)
