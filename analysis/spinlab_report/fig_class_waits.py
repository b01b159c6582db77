"""Figure and table: which lock classes wait longest, per phase.

Classes are ranked by the 99th percentile of their timed waits (log-uniform within buckets,
see cdf.py); the table also gives the median, the largest wait the kernel saw and the
contended share, so a class with few but huge waits stands out from one that is merely busy.
"""
import numpy as np

from . import aggregate
from .cdf import percentile
from .plotting import Figure, color, plt, power_label, save

NAME, TITLE = "class_waits", "Longest-waiting lock classes (p99 wait)"


def class_rows(snaps) -> list:
    """One dict per lock class, longest p99 first; classes without timed waits last."""
    rows = []
    for cls, t in aggregate.by_key(snaps, "lock_class").items():
        rows.append({"class": cls, "acquisitions": t.acquisitions, "contended": t.contended,
                     "contended_share": t.contended / t.acquisitions if t.acquisitions else None,
                     "p50": percentile(t.wait, 50), "p99": percentile(t.wait, 99),
                     "max": aggregate.wait_max(snaps, cls)})
    return sorted(rows, key=lambda r: (r["p99"] is None, -(r["p99"] or 0), r["class"]))


def make(run, outdir: str) -> Figure:
    rows = {p: [r for r in class_rows(run.snaps(p)) if r["p99"] is not None] for p in run.phases}
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
