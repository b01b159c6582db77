"""Figure: CDF of the wake-to-run delay (a ready-thread event to the context switch that puts the
readied thread on a CPU), from the trace's state machine."""
import numpy as np

from .plotting import Figure, log10_axis, plt, save

NAME, TITLE = "wake_cdf", "CDF of wake-to-run delay"


def make(a, outdir: str, name: str = NAME) -> Figure:
    if not a.wake_delays:
        return Figure(name, TITLE, missing="the trace has no ready-thread event followed by its thread running")
    d = np.sort(np.asarray(a.wake_delays, dtype=float)) * 1e6 / a.tsc_hz
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.step(d, np.arange(1, len(d) + 1) / len(d), where="post", lw=2)
    if d[0] > 0:
        log10_axis(ax, "x")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("wake-to-run delay (µs)")
    ax.set_ylabel("share of wakes ≤ x")
    ax.set_title(TITLE)
    fig.tight_layout()
    return save(fig, outdir, name, TITLE, f"{len(d)} wakes.")
