"""Figure: a per-CPU timeline of a trace window: which thread ran (from the context switches),
idle, and the long spinlock waits (on the waiter's CPU, with a line to the holder's CPU).

The window: around the longest long wait (the wait and as much again on each side), else the
first 10 ms of the trace. Spans are drawn as one collection per thread and CPU (not one call
per span), rasterized when dense; beyond MAX_ARROWS long waits the arrows to the holder's CPU
become one line collection, one line per pixel column and CPU pair."""
import numpy as np
from matplotlib.collections import LineCollection

from . import dense
from .plotting import PALETTE, Figure, plt, rows_height, save

THREAD_COLORS = [c for c in PALETTE if c != "#d62728"]  # red marks long waits

NAME, TITLE = "trace_timeline", "Per-CPU timeline of a trace window"
MAX_ARROWS = 200  # beyond this, holder links are plain lines (an arrow head each is slow and unreadable)


def _waits(a) -> dict:
    """The trace's long waits as columns (trace_replay.LongWaitTable; a plain list of dicts, as
    tests may give, is turned into columns)."""
    lw = a.long_waits
    if hasattr(lw, "columns"):
        return lw.columns
    return {k: np.array([-1 if w[k] is None else w[k] for w in lw], dtype=np.int64)
            for k in ("tsc", "cpu", "wait_cycles", "holder_cpu")}


def window(a) -> tuple:
    w = _waits(a)
    if len(w["tsc"]):
        i = int(np.argmax(w["wait_cycles"]))  # the first of the longest, as max() picks
        t, c = int(w["tsc"][i]), int(w["wait_cycles"][i])
        return max(a.start, t - c), min(a.end, t + 2 * c)
    return a.start, min(a.end, a.start + a.tsc_hz // 100)


def spans_in(iv, lo, hi) -> tuple:
    """(starts, ends, thread ids) of a CPU's run intervals clipped to [lo, hi), known threads only."""
    if not iv:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    s = np.array([x[0] for x in iv], dtype=np.float64)
    e = np.array([x[1] for x in iv], dtype=np.float64)
    tid = np.array([-1 if x[2] is None else x[2] for x in iv], dtype=np.int64)
    s, e = np.maximum(s, lo), np.minimum(e, hi)
    keep = (e > s) & (tid >= 0)
    return s[keep], e[keep], tid[keep]


def make(a, outdir: str, name: str = NAME) -> Figure:
    if not any(tid is not None for iv in a.run_intervals.values() for _, _, tid in iv) and not a.long_waits:
        return Figure(name, TITLE, missing="the trace has no context switches and no long waits")
    lo, hi = window(a)
    us = lambda t: (t - lo) * 1e6 / a.tsc_hz  # noqa: E731
    fig, ax = plt.subplots(figsize=(8, rows_height(a.cpus, 0.6, 1.2)))
    # Threads: one collection per thread (colour), all CPUs; colours and legend in order of first
    # appearance (CPU by CPU, in time).
    per_tid, order = {}, []
    for cpu, iv in a.run_intervals.items():
        s, e, tid = spans_in(iv, lo, hi)
        for t in dict.fromkeys(tid.tolist()):
            if t not in per_tid:
                order.append(t)
            m = tid == t
            per_tid.setdefault(t, []).append((cpu, us(s[m]), us(e[m]) - us(s[m])))
    colors = {}
    for tid in order:
        c = "#dddddd" if tid == 0 else colors.setdefault(tid, THREAD_COLORS[len(colors) % len(THREAD_COLORS)])
        label = "idle" if tid == 0 else f"thread {tid}"
        for cpu, x, w in per_tid[tid]:
            ax.broken_barh(list(zip(x, w)), (cpu - 0.3, 0.6), color=c, label=label,
                           rasterized=x.size > dense.DENSE)
            label = None
    # Long waits in the window: one collection of bars per CPU, one of holder arrows.
    w = _waits(a)
    t, c = w["tsc"], w["wait_cycles"]
    inside = ~((t + c < lo) | (t > hi))
    x0, x1 = us(np.maximum(t[inside], lo)), us(np.minimum(t[inside] + c[inside], hi))
    cpu_of, holder_of = w["cpu"][inside], w["holder_cpu"][inside]
    label = "long wait"
    for cpu in np.unique(cpu_of).tolist():
        m = cpu_of == cpu
        ax.broken_barh(list(zip(x0[m].tolist(), (x1[m] - x0[m]).tolist())), (cpu - 0.1, 0.2), color="#d62728",
                       label=label, rasterized=int(m.sum()) > dense.DENSE)
        label = None
    placed = holder_of >= 0
    arrows = list(zip(x0[placed].tolist(), cpu_of[placed].tolist(), holder_of[placed].tolist()))
    if len(arrows) <= MAX_ARROWS:
        for x, frm, to in arrows:
            ax.annotate("", xy=(x, to), xytext=(x, frm), arrowprops={"arrowstyle": "->", "color": "#d62728"})
    else:  # a line per wait, thinned to one per pixel column and pair of CPUs
        x = np.array([q[0] for q in arrows])
        frm, to = np.array([q[1] for q in arrows]), np.array([q[2] for q in arrows])
        keep = dense.one_per_cell(dense.pixel(x, 0, us(hi), int(8 * fig.dpi)), frm, to)
        ax.add_collection(LineCollection([[(x[i], frm[i]), (x[i], to[i])] for i in keep], colors="#d62728",
                                         linewidths=0.5, alpha=0.6, rasterized=keep.size > dense.DENSE))
    ax.set_yticks(range(a.cpus), [f"CPU {c}" for c in range(a.cpus)])
    ax.set_ylim(-0.6, a.cpus - 0.4)
    ax.set_xlim(0, us(hi))
    ax.set_xlabel("µs from the window's start")
    ax.set_title(TITLE)
    ax.legend(loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    return save(fig, outdir, name, TITLE,
                "Threads from the context switches (grey: idle); red: long spinlock waits on the waiter's CPU, "
                "the arrow points at the holder's CPU.")
