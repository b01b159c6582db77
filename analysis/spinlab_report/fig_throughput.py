"""Figure: lockbench throughput per phase, mean with Student t interval, and each repetition.

The interval is across repetitions (confidence.mean_ci); with a single repetition only the
point is drawn. The percentage change from the baseline phase is written above each bar.
"""
from .plotting import Figure, color, plt, save

NAME, TITLE = "throughput", "lockbench throughput per phase"


def make(run, summary: dict, outdir: str) -> Figure:
    tp = {p: s["throughput"] for p, s in summary["phases"].items() if s.get("throughput", {}).get("n")}
    if not tp:
        return Figure(NAME, TITLE, missing="no repetition reported lockbench operations per second")
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(tp), 3.6))
    for i, (phase, t) in enumerate(tp.items()):
        c = color(run.phases, phase)
        ax.bar(i, t["mean"], width=0.6, color=c, alpha=0.35)
        if t["low"] is not None:
            ax.errorbar(i, t["mean"], yerr=[[t["mean"] - t["low"]], [t["high"] - t["mean"]]], color=c,
                        capsize=6, lw=1.5)
        ax.plot([i] * len(t["values"]), t["values"], "o", color=c, ms=4)
        change = t.get("change_vs_baseline_pct")
        if change is not None and phase != summary.get("baseline_phase"):
            ax.annotate(f"{change:+.1f}%", (i, t["high"] if t["high"] is not None else t["mean"]),
                        textcoords="offset points", xytext=(0, 4), ha="center")
    ax.set_xticks(range(len(tp)), list(tp))
    ax.set_ylabel("operations per second")
    ax.set_ylim(bottom=0)
    conf = int(round(summary["confidence"] * 100))
    ax.set_title(TITLE)
    fig.tight_layout()
    return save(fig, outdir, NAME, TITLE, f"Bars: mean over repetitions; whiskers: {conf}% Student t "
                f"interval; dots: single repetitions; labels: change from {summary.get('baseline_phase')}.")
