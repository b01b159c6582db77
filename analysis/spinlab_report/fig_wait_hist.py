"""Figure: the log2 wait table as bars, one panel per phase: share of contended waits per 2^k
bucket.

Bars are shares of contended acquisitions (timed + overflow), the same numbers as table.txt;
the overflow share is written in the panel so untimed waits are not hidden.
"""
import numpy as np

from .plotting import Figure, color, k_range, plt, power_label, save

NAME, TITLE = "wait_hist", "Contended waits per log2 bucket"


def bucket_shares(t) -> np.ndarray:
    """Percent of contended acquisitions in each bucket (zeros when there were none)."""
    return 100.0 * t.wait / t.contended if t.contended else np.zeros(len(t.wait))


def make(phases: list, totals: dict, outdir: str) -> Figure:
    """phases: the run's, in order; totals: phase -> aggregate.Totals of those with snapshots."""
    rng = k_range([t.wait for t in totals.values()])
    if rng is None:
        return Figure(NAME, TITLE, missing="no phase has timed contended waits: every wait histogram is empty")
    lo, hi = rng
    ks = np.arange(lo, hi)
    fig, axes = plt.subplots(1, len(phases), figsize=(3.6 * len(phases), 3.4), sharey=True, squeeze=False)
    for ax, phase in zip(axes[0], phases):
        ax.set_title(phase)
        ax.set_xlabel("wait bucket k: [2^k, 2^(k+1)) TSC cycles")
        t = totals.get(phase)
        if t is None or not t.wait.sum():
            ax.text(0.5, 0.5, "missing" if t is None else "no timed waits", transform=ax.transAxes,
                    ha="center", va="center", color="#b00")
            continue
        ax.bar(ks, bucket_shares(t)[lo:hi], width=0.8, color=color(phases, phase))
        step = max(1, -(-len(ks) // 8))  # at most ~8 labels, so 2^k stays legible
        ax.set_xticks(ks[::step], [power_label(2, k) for k in ks[::step]])
        ax.text(0.98, 0.95, f"overflow {100.0 * t.overflow / t.contended:.2f}%\n{t.contended} contended",
                transform=ax.transAxes, ha="right", va="top", fontsize=8)
    axes[0][0].set_ylabel("% of contended acquisitions")
    fig.suptitle(TITLE)
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE, "Same numbers as table.txt; all repetitions, CPUs and lock classes.")
