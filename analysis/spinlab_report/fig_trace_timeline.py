"""Figure: a per-CPU timeline of a trace window: which thread ran (from the context switches),
idle, and the long spinlock waits (on the waiter's CPU, with a line to the holder's CPU).

The window: around the longest long wait (the wait and as much again on each side), else the
first 10 ms of the trace."""
from .plotting import PALETTE, Figure, plt, save

THREAD_COLORS = [c for c in PALETTE if c != "#d62728"]  # red marks long waits

NAME, TITLE = "trace_timeline", "Per-CPU timeline of a trace window"


def window(a) -> tuple:
    if a.long_waits:
        w = max(a.long_waits, key=lambda x: x["wait_cycles"])
        return max(a.start, w["tsc"] - w["wait_cycles"]), min(a.end, w["tsc"] + 2 * w["wait_cycles"])
    return a.start, min(a.end, a.start + a.tsc_hz // 100)


def make(a, outdir: str, name: str = NAME) -> Figure:
    if not any(tid is not None for iv in a.run_intervals.values() for _, _, tid in iv) and not a.long_waits:
        return Figure(name, TITLE, missing="the trace has no context switches and no long waits")
    lo, hi = window(a)
    us = lambda t: (t - lo) * 1e6 / a.tsc_hz  # noqa: E731
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.6 * a.cpus))
    colors, labels = {}, set()
    for cpu, iv in a.run_intervals.items():
        for s, e, tid in iv:
            s, e = max(s, lo), min(e, hi)
            if e <= s or tid is None:
                continue
            c = "#dddddd" if tid == 0 else colors.setdefault(tid, THREAD_COLORS[len(colors) % len(THREAD_COLORS)])
            label = ("idle" if tid == 0 else f"thread {tid}") if tid not in labels else None
            labels.add(tid)
            ax.broken_barh([(us(s), us(e) - us(s))], (cpu - 0.3, 0.6), color=c, label=label)
    for w in a.long_waits:
        s, e = w["tsc"], w["tsc"] + w["wait_cycles"]
        if e < lo or s > hi:
            continue
        ax.broken_barh([(us(max(s, lo)), us(min(e, hi)) - us(max(s, lo)))], (w["cpu"] - 0.1, 0.2), color="#d62728",
                       label="long wait" if "lw" not in labels else None)
        labels.add("lw")
        if w["holder_cpu"] is not None:
            ax.annotate("", xy=(us(max(s, lo)), w["holder_cpu"]), xytext=(us(max(s, lo)), w["cpu"]),
                        arrowprops={"arrowstyle": "->", "color": "#d62728"})
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
