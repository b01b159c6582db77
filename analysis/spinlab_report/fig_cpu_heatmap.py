"""Figure: per-CPU heatmap of wait buckets, one panel per phase.

Cell (CPU, 2^k) is the share of that CPU's timed waits falling in bucket k, so CPUs with few
waits are as visible as busy ones; the colour scale is logarithmic because LHP waits are rare
(a fraction of a percent) next to the bulk.
"""
import numpy as np
from matplotlib.colors import LogNorm

from . import aggregate
from .plotting import Figure, k_range, plt, power_label, save

NAME, TITLE = "cpu_heatmap", "Wait buckets per CPU"


def cpu_matrix(snaps, lo: int, hi: int) -> tuple[list, np.ndarray]:
    """(cpu numbers, rows of per-bucket shares over buckets lo..hi-1); NaN where a CPU had no waits."""
    per_cpu = aggregate.by_key(snaps, "cpu")
    cpus = list(per_cpu)
    m = np.full((len(cpus), hi - lo), np.nan)
    for i, cpu in enumerate(cpus):
        w = per_cpu[cpu].wait
        if w.sum():
            row = w[lo:hi] / w.sum()
            m[i] = np.where(row > 0, row, np.nan)
    return cpus, m


def make(run, totals: dict, outdir: str) -> Figure:
    """totals: phase -> aggregate.Totals of the phases with snapshots (aggregate.Counters)."""
    rng = k_range([t.wait for t in totals.values()])
    if rng is None:
        return Figure(NAME, TITLE, missing="no CPU has timed contended waits in any phase")
    lo, hi = rng
    fig, axes = plt.subplots(1, len(run.phases), figsize=(3.8 * len(run.phases) + 1, 2.8), squeeze=False,
                             layout="constrained")
    image = None
    for ax, phase in zip(axes[0], run.phases):
        ax.set_title(phase)
        ax.set_xlabel("wait bucket (TSC cycles)")
        cpus, m = cpu_matrix(run.snaps(phase), lo, hi)
        if not cpus or np.isnan(m).all():
            ax.text(0.5, 0.5, "missing" if not run.snaps(phase) else "no timed waits",
                    transform=ax.transAxes, ha="center", va="center", color="#b00")
            continue
        image = ax.imshow(m, aspect="auto", cmap="viridis", norm=LogNorm(vmin=1e-4, vmax=1),
                          extent=(lo - 0.5, hi - 0.5, len(cpus) - 0.5, -0.5), interpolation="nearest")
        ax.set_yticks(range(len(cpus)), [f"CPU {c}" for c in cpus])
        step = max(1, (hi - lo) // 8)
        ax.set_xticks(range(lo, hi, step), [power_label(2, k) for k in range(lo, hi, step)])
        ax.grid(False)
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), label="share of the CPU's waits")
    fig.suptitle(TITLE)
    return save(fig, outdir, NAME, TITLE, "Blank cells: no waits in that bucket. All repetitions pooled.")
