"""Figure: the 200 ms with the most long waits, every wait and every vCPU off-interval drawn.

The window is chosen over all phases and repetitions: the 200 ms (of guest time, at the guest
TSC rate) that start at some long wait and hold the most long-wait starts. One row per vCPU:
the upper bar shows when the host had that vCPU off-CPU (grey) or frozen (black), the lower
bar the long waits that vCPU spun, coloured by class, with a thin line down or up to the row of
the lock's holder. Short intervals are drawn at least one line wide so none disappears.

Where timeline.csv names the preemptor of each switch-out (its `preemptor` column,
preemptors.py), each off-interval is coloured by the class of the task that took the CPU (a
freeze, a hog, a neighbour VM's vCPU, this VM's other vCPU, another host task, unknown), and
the caption counts the intervals of each class.
"""
import numpy as np

from matplotlib.collections import LineCollection

from . import lhp, preemptors
from .contract import OFF_STATES, UNKNOWN_STATE
from .fig_wait_ccdf import tsc_hz
from .plotting import CLASS_COLORS, Figure, plt, rows_height, save
from .verdict import cycles_text

NAME, TITLE = "long_wait_window", "The 200 ms with the most long waits"
WINDOW_S = 0.2
OFF_COLORS = {"off": "#cfcfcf", "frozen": "#111111", "unknown": "#f2d7a6"}  # light: waits (darker) stand out
# Off-intervals by preemptor class (names.PREEMPTOR_CLASS), where the timeline names them.
PREEMPTOR_COLORS = {"freeze": "#111111", "hog": "#8c564b", "neighbour-vcpu": "#e377c2", "own-vcpu": "#17becf",
                    "host-task": "#cfcfcf", "blocked": "#bcbd22", "unknown": "#9e9e9e"}


def busiest_window(starts, width: float) -> tuple[float, int] | None:
    """(start, count) of the window [start, start + width) holding the most of `starts`.

    Windows begin at one of the starts (a busiest window can always be slid to its first wait).
    """
    s = np.sort(np.asarray(starts, dtype=np.float64))
    if not s.size:
        return None
    counts = np.searchsorted(s, s + width, side="left") - np.arange(s.size)
    i = int(np.argmax(counts))
    return float(s[i]), int(counts[i])


def pick(run, att, width: float):
    """(phase, rep, window start in guest TSC, waits in the window) with the most long waits of
    att (the run's Attribution); the waits of the window only are made into dicts."""
    best = None
    for phase in run.phases:
        for table in att.phases[phase]["waits"].columns:  # one per repetition
            start = table.start_tsc()
            found = busiest_window(start, width)
            if found and (best is None or found[1] > best[3].size):
                t0 = found[0]
                best = (phase, table.rep, t0, np.flatnonzero((t0 <= start) & (start < t0 + width)), table)
    if best is None:
        return None
    phase, rep, t0, inside, table = best
    return phase, rep, t0, [table.row(k) for k in inside.tolist()]


def make(run, att, outdir: str) -> Figure:
    threshold = att.long_wait_threshold
    hz = tsc_hz(run.meta)
    if hz is None:
        return Figure(NAME, TITLE, missing="meta.json gives no TSC rate, so 200 ms cannot be converted to cycles")
    width = WINDOW_S * hz
    found = pick(run, att, width)
    if found is None:
        return Figure(NAME, TITLE, missing=f"no long waits (>= {threshold} cycles) were listed by the guest")
    phase, rep, t0, waits = found
    ms = lambda cycles: cycles / hz * 1e3
    cpus = {w["cpu"] for w in waits} | {w["holder_cpu"] for w in waits if w["holder_cpu"] is not None}
    fig, ax = plt.subplots(figsize=(9, rows_height(max(len(cpus), 2), 0.9, 1.6)), layout="constrained")
    n_off = 0
    by_preemptor = {}  # preemptor class -> off-intervals drawn (only where the timeline names them)
    named = preemptors.has_column(run.timeline)
    if run.timeline is not None and run.clock is not None:
        host0 = float(lhp.guest_to_host(t0, run.clock))
        tl = run.timeline[(run.timeline["phase"] == phase) & (run.timeline["rep"] == rep)
                          & run.timeline["state"].isin(OFF_STATES + (UNKNOWN_STATE,))]
        tl = tl[(tl["end_host_tsc"] > host0) & (tl["start_host_tsc"] < host0 + width)]
        # each row's colour: its preemptor class where the timeline names it (off and frozen
        # rows), else its state (off, frozen, or unknown: not traced)
        classes = preemptors.row_classes(tl) if named else np.full(len(tl), None, dtype=object)
        tl = tl.assign(_preemptor=[c if c is not None else "" for c in classes])
        for (vcpu, state, who), g in tl.groupby(["vcpu", "state", "_preemptor"]):
            spans = [(ms(a - host0), ms(b - a)) for a, b in zip(g["start_host_tsc"], g["end_host_tsc"])]
            c = PREEMPTOR_COLORS[who] if who else OFF_COLORS[state]
            ax.broken_barh(spans, (vcpu - 0.4, 0.35), color=c, edgecolor=c, lw=0.6)
            n_off += len(spans)
            if who:
                by_preemptor[who] = by_preemptor.get(who, 0) + len(spans)
            cpus.add(int(vcpu))
    for cls in sorted({w["cause"] for w in waits}):  # one collection of bars and one of lines per class
        c = CLASS_COLORS.get(cls, CLASS_COLORS["unknown"])
        mine = [w for w in waits if w["cause"] == cls]
        for cpu in sorted({w["cpu"] for w in mine}):
            ax.broken_barh([(ms(w["start_tsc"] - t0), ms(w["wait_cycles"])) for w in mine if w["cpu"] == cpu],
                           (cpu + 0.05, 0.35), color=c, edgecolor=c, lw=0.6)
        lines = [[(ms(w["start_tsc"] - t0), w["cpu"] + 0.05), (ms(w["start_tsc"] - t0), w["holder_cpu"] - 0.05)]
                 for w in mine if w["holder_cpu"] is not None and w["holder_cpu"] != w["cpu"]]
        if lines:
            ax.add_collection(LineCollection(lines, colors=c, linewidths=0.5, alpha=0.7))
    cpus = sorted(cpus)
    ax.set_yticks(cpus, [f"vCPU {c}" for c in cpus])
    ax.set_ylim(max(cpus) + 0.6, min(cpus) - 0.6)
    ax.set_xlim(0, WINDOW_S * 1e3)
    ax.set_xlabel(f"ms since the window's start ({phase} r{rep})")
    host_keys = ([(f"host: off, CPU taken by {who.replace('-', ' ')}", PREEMPTOR_COLORS[who])
                  for who in preemptors.CLASSES if who in by_preemptor] if named else
                 [("host: vCPU off-CPU", OFF_COLORS["off"]), ("host: vCPU frozen", OFF_COLORS["frozen"])])
    for label, c in host_keys + [("host: not traced (on or off)", OFF_COLORS["unknown"])]:
        ax.plot([], [], color=c, lw=6, label=label)
    for cls in sorted({w["cause"] for w in waits}):
        ax.plot([], [], color=CLASS_COLORS.get(cls, CLASS_COLORS["unknown"]), lw=6, label=f"wait: {cls.replace('-', ' ')}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, fontsize=7, frameon=False)
    ax.set_title(f"{TITLE}: {phase} r{rep}, {len(waits)} waits \u2265 {cycles_text(threshold)} cycles, "
                 f"{n_off} off-intervals")
    snap = next((x for x in run.snaps(phase) if x.rep == rep), None)
    since = ms(t0 - snap.start_guest_tsc) if snap and snap.start_guest_tsc is not None else None
    where = f", {since:,.0f} ms after the repetition started" if since is not None else ""
    timeline = "" if n_off or run.timeline is not None else " No host timeline: off-intervals cannot be shown."
    if named:
        counts = ", ".join(f"{who} {by_preemptor[who]}" for who in preemptors.CLASSES if who in by_preemptor)
        timeline += (" Off-intervals are coloured by the task that took the vCPU's host CPU (the preemptor; "
                     f"intervals in the window: {counts or 'none'}).")
    return save(fig, outdir, NAME, TITLE, f"{phase} repetition {rep}{where}. In each "
                "vCPU's row, the upper bar is the host's view (off-CPU or frozen), the lower bar the long waits that "
                f"vCPU spun; a thin line leads to the lock holder's row.{timeline}")
