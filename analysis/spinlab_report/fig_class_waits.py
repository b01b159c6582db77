"""Figure: which lock classes wait longest, per phase (the rows: aggregate.class_rows, which
report_doc's table reads too).

Classes are ranked by the 99th percentile of their timed waits (log-uniform within buckets,
see cdf.py); the table also gives the median, the largest wait the kernel saw and the
contended share, so a class with few but huge waits stands out from one that is merely busy.
"""
import numpy as np

from .plotting import Figure, color, plt, power_label, save

NAME, TITLE = "class_waits", "Longest-waiting lock classes (p99 wait)"


def make(run, lock_classes: dict, outdir: str) -> Figure:
    """lock_classes: phase -> its lock classes' rows (aggregate.Counters.classes)."""
    rows = {p: [r for r in lock_classes[p] if r["p99"] is not None] for p in run.phases}
    classes = sorted({r["class"] for rs in rows.values() for r in rs})
    if not classes:
        return Figure(NAME, TITLE, missing="no lock class has timed contended waits")
    y = np.arange(len(classes))
    h = 0.8 / len(run.phases)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.5 * len(classes) * max(1, len(run.phases) / 2)))
    for i, phase in enumerate(run.phases):
        p99 = {r["class"]: r["p99"] for r in rows[phase]}
        vals = [np.log2(p99[c]) if c in p99 else 0 for c in classes]
        ax.barh(y + i * h, vals, height=h, color=color(run.phases, phase), label=phase)
    ax.set_yticks(y + h * (len(run.phases) - 1) / 2, classes)
    top = int(np.ceil(ax.get_xlim()[1]))
    ax.set_xticks(range(0, top + 1, max(1, top // 10)), [power_label(2, k) for k in range(0, top + 1, max(1, top // 10))])
    ax.set_xlabel("p99 wait (TSC cycles, log2)")
    ax.set_title(TITLE)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE, "Bars are log2 of each class's 99th-percentile wait; "
                "a missing bar means no timed wait for that class in that phase.")
