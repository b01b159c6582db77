"""Figure (headline): complementary CDF of contended waits, log y, log2 x, a band per phase.

P(wait > x) on a log y axis is where lock-holder preemption shows: a linear CDF squeezes the
last 0.1% into one pixel, the CCDF gives every factor of ten the same height. The line is the
pooled repetitions, the band the range of single repetitions. Vertical marks: the long-wait
threshold, and the host's scheduling slice or the freeze length of freeze phases, converted
to cycles with the guest TSC rate, because those are the wait lengths preemption produces.
"""
import math

import numpy as np

from .cdf import cdf_at
from .fig_wait_cdf import phase_curves
from .freeze_lengths import freeze_ms
from .plotting import Figure, color, k_range, log10_axis, log2_axis, plt, save

NAME, TITLE = "wait_ccdf", "Share of contended waits longer than x"
BASE_SLICE_NS = 750_000  # Linux's sched base slice, scaled by 1 + log2(CPUs) (at most 8 CPUs)


def ccdf_at(hist, grid) -> np.ndarray | None:
    """1 - CDF on `grid` (cycles), log-uniform inside buckets as everywhere (cdf.py)."""
    c = cdf_at(hist, grid)
    return None if c is None else np.clip(1.0 - c, 0.0, 1.0)


def tsc_hz(meta) -> float | None:
    """The guest's TSC rate (meta: the run's reader.Meta), else the host's; None when neither is known."""
    hz = meta.guest_tsc_hz or meta.host.tsc_hz
    return float(hz) if isinstance(hz, (int, float)) and hz > 0 else None


def host_slice_ns(host) -> float | None:
    """The host's slice (host: the run's reader.Host): its sched_slice_ns when recorded, else
    Linux's default for its CPUs."""
    if isinstance(host.sched_slice_ns, (int, float)):
        return float(host.sched_slice_ns)
    cpus = host.cpus
    if not isinstance(cpus, int) or cpus < 1:
        return None
    return BASE_SLICE_NS * (1 + int(math.log2(min(cpus, 8))))


def marks(run, threshold: int) -> list:
    """[(cycles, label)] to draw as vertical lines."""
    out = [(float(threshold), f"threshold 2^{math.log2(threshold):.0f}")]
    hz = tsc_hz(run.meta)
    if hz is None:
        return out
    freezes = sorted({ms for p in run.phases if (ms := freeze_ms(p)) is not None})
    out += [(ms * 1e-3 * hz, f"freeze {ms} ms") for ms in freezes]
    if not freezes:
        ns = host_slice_ns(run.meta.host)
        if ns:
            recorded = run.meta.host.sched_slice_ns is not None
            out.append((ns * 1e-9 * hz, f"host slice {ns / 1e6:.2f} ms" + ("" if recorded else " (Linux default)")))
    return out


def draw(ax, phases: list, curves: dict, lo: int, hi: int, label_fn) -> float:
    """Lines and bands on ax; returns the smallest share drawn (the y axis' floor)."""
    grid = np.exp2(np.linspace(lo, hi, 600))
    floor = 1.0
    for phase, (reps, pooled) in curves.items():
        c = color(phases, phase)
        n = int(pooled.sum())
        floor = min(floor, 0.5 / n)
        y = ccdf_at(pooled, grid)
        ax.plot(grid, np.where(y > 0, y, np.nan), color=c, lw=2, label=label_fn(phase, reps, pooled))
        band = [b for b in (ccdf_at(h, grid) for h in reps) if b is not None]
        if len(band) > 1:
            stack = np.vstack(band)
            low, high = stack.min(axis=0), stack.max(axis=0)
            ax.fill_between(grid, np.maximum(low, floor), np.maximum(high, floor), where=high > 0,
                            color=c, alpha=0.2, lw=0)
    return floor


def make(run, outdir: str, threshold: int) -> Figure:
    curves = phase_curves(run)
    if not curves:
        return Figure(NAME, TITLE, missing="no phase has timed contended waits: every wait histogram is empty")
    lo, hi = k_range([p for _, p in curves.values()])
    hz = tsc_hz(run.meta)
    mk = marks(run, threshold)
    hi = max(hi, *(math.ceil(math.log2(x)) for x, _ in mk))
    fig, ax = plt.subplots(figsize=(6, 4.2))
    floor = draw(ax, run.phases, curves, lo, hi,
                 lambda p, reps, pooled: f"{p} ({len(reps)} reps, {int(pooled.sum())} waits)")
    log2_axis(ax, lo, hi)
    log10_axis(ax, "y")
    ax.set_ylim(floor, 1.5)
    for i, (x, label) in enumerate(mk):
        ax.axvline(x, color="#444444", ls="--" if i == 0 else ":", lw=1)
        # the threshold's label left of its line, the others right of theirs, so close marks stay legible
        ax.text(x, 1.2, f" {label}", rotation=90, va="top", ha="right" if i == 0 else "left", fontsize=7,
                color="#333333")
    ax.set_ylabel("share of contended waits > x")
    ax.set_title(TITLE)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    rate = f" Cycles to time at {hz / 1e9:.2f} GHz (guest TSC)." if hz else ""
    return save(fig, outdir, NAME, TITLE,
                "Log y: every factor of ten gets the same height, so the tail the linear CDF flattens is "
                "visible. Line: repetitions pooled; band: range of single repetitions. Dashed: the long-wait "
                f"threshold; dotted: the host's slice or the freeze length.{rate}")
