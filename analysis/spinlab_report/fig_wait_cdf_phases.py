"""Figure: CDF of contended wait cycles, one panel per phase, side by side (as the
original experiment showed them).

Every repetition is drawn as a thin line and the pooled CDF as a thick one, on a shared log2
axis so the panels compare by eye. A phase without timed waits gets a panel that says so.
"""
from .cdf import cdf_points
from .fig_wait_cdf import phase_curves
from .plotting import Figure, color, k_range, log2_axis, plt, save

NAME, TITLE = "wait_cdf_phases", "CDF of contended wait cycles per phase"


def make(run, outdir: str) -> Figure:
    curves = phase_curves(run)
    if not curves:
        return Figure(NAME, TITLE, missing="no phase has timed contended waits: every wait histogram is empty")
    lo, hi = k_range([p for _, p in curves.values()])
    phases = run.phases
    fig, axes = plt.subplots(1, len(phases), figsize=(3.6 * len(phases), 3.6), sharey=True, squeeze=False)
    for ax, phase in zip(axes[0], phases):
        ax.set_title(phase)
        log2_axis(ax, lo, hi)
        ax.set_ylim(0, 1.02)
        if phase not in curves:
            reason = "missing" if not run.snaps(phase) else "no timed waits"
            ax.text(0.5, 0.5, reason, transform=ax.transAxes, ha="center", va="center", color="#b00")
            continue
        reps, pooled = curves[phase]
        c = color(phases, phase)
        for s, h in zip(run.snaps(phase), reps):
            pts = cdf_points(h)
            if pts is not None:
                ax.plot(*pts, color=c, lw=0.8, alpha=0.6)
        ax.plot(*cdf_points(pooled), color=c, lw=2, label="pooled")
        ax.plot([], [], color=c, lw=0.8, alpha=0.6, label="repetitions")
        ax.legend(loc="lower right")
    axes[0][0].set_ylabel("share of contended waits \u2264 x")
    fig.suptitle(TITLE)
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE, "Thin lines: single repetitions; thick line: repetitions pooled.")
