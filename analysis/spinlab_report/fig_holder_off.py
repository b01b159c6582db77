"""Figure: holder-off fraction against wait length, one point per long wait, coloured by class.

The holder-off fraction is the share of the wait during which the holder's vCPU was off the
host CPU (off or frozen in timeline.csv). A wait caused by lock-holder preemption sits near 1;
a wait with a running holder near 0; the class thresholds are horizontal cuts. When the
attribution gives the fraction per wait (field holder_off_fraction), it is used as is; else it
is measured here from the host timeline joined through clock.json, and waits that cannot be
joined have no point (they are counted in the caption). Beyond dense.DENSE points, marks that
would land on the same pixel as another of their series are drawn once (the range bars: one per
run of covered pixels in each pixel column), and rasterized.
"""
import numpy as np
from matplotlib.collections import LineCollection

from . import dense, lhp
from .contract import OFF_STATES, UNKNOWN_STATE
from .plotting import CLASS_COLORS, Figure, k_range, log2_axis, plt, save

NAME, TITLE = "holder_off_scatter", "Holder off-CPU fraction against wait length, per long wait"


def off_intervals(timeline, phase: str, rep: int) -> dict:
    """vCPU -> (starts, ends, running maximum of ends, covered span, unknown intervals) of its
    off/frozen intervals in host TSC, sorted by start; the running maximum finds the first
    interval that can reach a time; the span is what the timeline covers for that vCPU (all
    states); the unknown intervals are where the host trace does not show its state."""
    df = timeline[(timeline["phase"] == phase) & (timeline["rep"] == rep)]
    out = {}
    for vcpu, g in df.groupby("vcpu"):
        span = (float(g["start_host_tsc"].min()), float(g["end_host_tsc"].max()))
        u = g[g["state"] == UNKNOWN_STATE]
        unknown = list(zip(u["start_host_tsc"].to_numpy(np.float64), u["end_host_tsc"].to_numpy(np.float64)))
        g = g[g["state"].isin(OFF_STATES)].sort_values("start_host_tsc")
        ends = g["end_host_tsc"].to_numpy(np.float64)
        out[int(vcpu)] = (g["start_host_tsc"].to_numpy(np.float64), ends, np.maximum.accumulate(ends), span, unknown)
    return out


def off_cycles(intervals: dict, vcpu, a: float, b: float) -> float | None:
    """Cycles of [a, b) covered by vcpu's off intervals (their union); None when the timeline does
    not cover [a, b) for that vCPU (it might have been off outside what was recorded), or when
    part of [a, b) is unknown in it."""
    if vcpu is None or vcpu not in intervals:
        return None
    starts, ends, reach_max, (lo, hi), unknown = intervals[vcpu]
    if a < lo or b > hi or any(min(e, b) > max(s, a) for s, e in unknown):
        return None
    i = int(np.searchsorted(starts, b, side="left"))
    j = int(np.searchsorted(reach_max, a, side="right"))  # intervals before j end at or before a
    total, reach = 0.0, a
    for s, e in zip(starts[j:i], ends[j:i]):
        s, e = max(s, reach), min(e, b)
        if e > s:
            total += e - s
            reach = e
    return total


def attributed_fraction(w: dict) -> tuple[float, float, float] | None:
    """(middle, least, most) holder-off fraction from the attribution's holder_off_cycles range."""
    rng = w.get("holder_off_cycles")
    if rng is None or not w["wait_cycles"]:
        return None
    lo, hi = (min(1.0, x / w["wait_cycles"]) for x in rng)
    return (lo + hi) / 2, lo, hi


def measured_fraction(run, phase: str, w: dict, cache: dict) -> tuple[float, float, float] | None:
    """The fraction measured here, for a wait the attribution gave no range: off cycles of the
    holder over the wait on the straight-line clock, or None."""
    if run.timeline is None or run.clock is None or not w["wait_cycles"]:
        return None
    if w["rep"] not in cache:
        cache[w["rep"]] = off_intervals(run.timeline, phase, w["rep"])
    a = float(lhp.guest_to_host(w["start_tsc"], run.clock))
    off = off_cycles(cache[w["rep"]], w["holder_cpu"], a, a + w["wait_cycles"])
    return None if off is None else (off / w["wait_cycles"],) * 3


def points(run, att) -> tuple[dict, int, int]:
    """({phase, wait, fraction, cause, least, most}: one array each, a point per wait that has a
    fraction, in the order of the waits), waits without a fraction, fractions from the attribution.
    The attribution's range (att: the run's Attribution) for the waits that have one (over arrays);
    the others measured here one by one (measured_fraction)."""
    cols, missing, given = {k: [] for k in ("phase", "wait", "fraction", "cause", "least", "most")}, 0, 0
    for phase in run.phases:
        cache = {}
        for table in att.phases[phase]["waits"].columns:
            wait = table.wait_cycles()
            frac = np.full((3, len(table)), np.nan)
            ok = ~np.isnan(table.h_lo) & (wait != 0)
            lo, hi = (np.minimum(1.0, x[ok] / wait[ok]) for x in (table.h_lo, table.h_hi))
            frac[:, ok] = (lo + hi) / 2, lo, hi
            given += int(np.count_nonzero(ok))
            for k in np.flatnonzero(~ok).tolist():
                f = measured_fraction(run, phase, table.row(k), cache)
                if f is not None:
                    frac[:, k] = f
            has = ~np.isnan(frac[0])
            missing += int(np.count_nonzero(~has))
            cols["phase"].append(np.full(int(np.count_nonzero(has)), phase, dtype=object))
            cols["wait"].append(wait[has])
            cols["cause"].append(table.cause()[has])
            for i, key in enumerate(("fraction", "least", "most")):
                cols[key].append(frac[i][has])
    empty = {"phase": object, "cause": object, "wait": np.int64}
    return ({k: np.concatenate(v) if v else np.zeros(0, dtype=empty.get(k, np.float64)) for k, v in cols.items()},
            missing, given)


FIGSIZE, YLIM = (6, 4.2), (-0.04, 1.04)


def grid(dpi: float) -> tuple[int, int]:
    """The figure's pixels (columns, rows): the grid dense figures thin their marks to."""
    return int(FIGSIZE[0] * dpi), int(FIGSIZE[1] * dpi)


def thin(x, y, lo_k: int, hi_k: int, dpi: float) -> np.ndarray:
    """Indices of the points to draw: all of them up to dense.DENSE, else one per pixel cell of
    the figure, which looks the same."""
    if x.size <= dense.DENSE:
        return np.arange(x.size)
    w, h = grid(dpi)
    return dense.one_per_cell(dense.pixel(np.log2(x), lo_k, hi_k, w), dense.pixel(y, YLIM[0], YLIM[1], h))


def bars(x, lo_y, hi_y, lo_k: int, hi_k: int, dpi: float) -> tuple:
    """(x, y from, y to) of the range bars to draw: each bar up to dense.DENSE, else per pixel
    column one bar per run of the rows the bars cover (dense.column_runs), the same pixels."""
    if x.size <= dense.DENSE:
        return x, lo_y, hi_y
    w, h = grid(dpi)
    col, r0, r1 = dense.column_runs(dense.pixel(np.log2(x), lo_k, hi_k, w), dense.pixel(lo_y, YLIM[0], YLIM[1], h),
                                    dense.pixel(hi_y, YLIM[0], YLIM[1], h))
    row = (YLIM[1] - YLIM[0]) / h
    return 2.0 ** (lo_k + (col + 0.5) * (hi_k - lo_k) / w), YLIM[0] + r0 * row, YLIM[0] + (r1 + 1) * row


def make(run, att, outdir: str) -> Figure:
    pts, missing, given = points(run, att)
    threshold = att.long_wait_threshold
    if not pts["wait"].size:
        why = "no long waits were listed" if not missing else \
            f"none of the {missing} long waits could be joined with a host timeline"
        return Figure(NAME, TITLE, missing=why)
    wait = pts["wait"].astype(np.float64)
    frac, least, most = pts["fraction"], pts["least"], pts["most"]
    cls_of, phase_of = pts["cause"], pts["phase"]
    lo, hi = k_range([np.bincount(np.maximum(np.frexp(wait)[1] - 1, 0), minlength=64)])  # bucket_of, vectorized
    fig, ax = plt.subplots(figsize=FIGSIZE)
    markers = ["o", "s", "^", "D", "v", "P"]
    phases = [p for p in run.phases if np.any(phase_of == p)]
    crowded, thinned = wait.size > dense.DENSE, False
    for cls, col in CLASS_COLORS.items():
        for i, phase in enumerate(phases):
            sel = np.flatnonzero((cls_of == cls) & (phase_of == phase))
            if sel.size:
                keep = sel[thin(wait[sel], frac[sel], lo, hi, fig.dpi)]
                thinned |= keep.size < sel.size
                bx, by0, by1 = bars(wait[sel], least[sel], most[sel], lo, hi, fig.dpi)
                ax.add_collection(LineCollection(np.stack([np.stack([bx, by0], 1), np.stack([bx, by1], 1)], 1),
                                                 colors=col, linewidths=0.6, alpha=0.5, rasterized=crowded))
                x, y = wait[keep], frac[keep]
                ax.scatter(x, y, s=14, color=col, marker=markers[i % len(markers)], alpha=0.7, lw=0,
                           label=f"{cls.replace('-', ' ')}, {phase} ({sel.size})", rasterized=crowded)
    log2_axis(ax, lo, hi)
    ax.set_ylim(*YLIM)
    ax.set_ylabel("share of the wait the holder was off-CPU")
    ax.set_title(TITLE, fontsize=9)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, frameon=False)
    fig.tight_layout()
    src = ("the attribution's holder off cycles (point: middle of the range the clock bound allows; bar: "
           "the range)") if given == wait.size else ("the host timeline's off/frozen intervals joined through "
                                                   "clock.json's straight line" + (f" ({given} from the attribution)" if given else ""))
    note = f" {missing} long wait(s) without a fraction (no timeline coverage or holder unknown) are not drawn." \
        if missing else ""
    if thinned:
        note += " Where several waits of one class and phase fall on the same pixel, one is drawn."
    return save(fig, outdir, NAME, TITLE, f"One point per wait of at least {threshold} cycles; the fraction is "
                f"measured from {src}. Colour: the wait's class; marker: its phase.{note}")
