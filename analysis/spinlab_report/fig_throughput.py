"""Figure: the workload's throughput per phase (lockbench's ops, or the acquisitions of the run's
throughput classes: throughput.py), mean with Student t interval, and each repetition.

The interval is across repetitions (confidence.mean_ci); with a single repetition only the
point is drawn. The percentage change from the baseline phase is written above each bar.
"""
from .plotting import Figure, color, plt, save
from .throughput import DEFAULT_METRIC

NAME, TITLE = "throughput", "lockbench throughput per phase"


def make(run, summary: dict, outdir: str) -> Figure:
    tp = {p: s["throughput"] for p, s in summary["phases"].items() if s.get("throughput", {}).get("n")}
    metric = next((t["metric"] for t in tp.values() if t.get("metric")), DEFAULT_METRIC)
    title = TITLE if metric == DEFAULT_METRIC else f"{metric.split(' ', 1)[0]} throughput per phase"
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
    ax.set_ylabel("operations per second" if metric == DEFAULT_METRIC else metric.split(" (", 1)[0])
    ax.set_ylim(bottom=0)
    conf = int(round(summary["confidence"] * 100))
    ax.set_title(title)
    fig.tight_layout()
    return save(fig, outdir, NAME, title, f"Bars: mean over repetitions; whiskers: {conf}% Student t "
                f"interval; dots: single repetitions; labels: change from {summary.get('baseline_phase')}.")
