"""Figure: long waits against vCPU off-CPU intervals, for the repetition with most long waits.

One row per vCPU: grey bars are the host timeline's off/frozen intervals, coloured bars the
long waits that CPU spent spinning, coloured by whether the holder's vCPU was off-CPU (red),
running (blue) or unknown (grey); a thin line joins each wait to its holder's row. Time is
guest TSC cycles from the start of the repetition, mapped through clock.json.
"""

from . import lhp
from .contract import OFF_STATES
from .plotting import Figure, plt, save

NAME, TITLE = "lhp_timeline", "Long waits against vCPU preemptions"
COLORS = {"off": "#d62728", "on": "#1f77b4", "unknown": "#999999"}


def pick(run, threshold: int):
    """(snapshot, classified waits) of the repetition with the most long waits, or (None, [])."""
    best = (None, [])
    for s in run.snapshots:
        waits = lhp.long_waits_share([s], run.timeline, run.clock, threshold)["waits"]
        if len(waits) > len(best[1]):
            best = (s, waits)
    return best


def make(run, outdir: str, threshold: int) -> Figure:
    snap, waits = pick(run, threshold)
    if snap is None:
        return Figure(NAME, TITLE, missing=f"no long waits (>= {threshold} cycles) were listed by the guest")
    t0 = snap.start_guest_tsc if snap.start_guest_tsc is not None else min(w["start_tsc"] for w in waits)
    fig, ax = plt.subplots(figsize=(8, 2.4 + 0.5 * len({w["cpu"] for w in waits})), layout="constrained")
    if run.timeline is not None and run.clock is not None:
        host0 = float(lhp.guest_to_host(t0, run.clock))
        tl = run.timeline[(run.timeline["phase"] == snap.phase) & (run.timeline["rep"] == snap.rep)]
        for vcpu, g in tl[tl["state"].isin(OFF_STATES)].groupby("vcpu"):
            spans = [((a - host0) / 1e6, (b - a) / 1e6) for a, b in zip(g["start_host_tsc"], g["end_host_tsc"])]
            ax.broken_barh(spans, (vcpu - 0.35, 0.3), color="#777777")
    for w in waits:
        state = "unknown" if w["lhp"] == "unknown" else ("off" if w["lhp"] in lhp.HOLDER_OFF else "on")
        x = (w["start_tsc"] - t0) / 1e6
        ax.broken_barh([(x, w["wait_cycles"] / 1e6)], (w["cpu"] + 0.05, 0.3), color=COLORS[state])
        if w["holder_cpu"] is not None:
            ax.plot([x, x], [w["cpu"] + 0.05, w["holder_cpu"] - 0.05], color=COLORS[state], lw=0.6)
    cpus = sorted({w["cpu"] for w in waits} | {w["holder_cpu"] for w in waits if w["holder_cpu"] is not None})
    ax.set_yticks(cpus, [f"vCPU {c}" for c in cpus])
    ax.set_ylim(max(cpus) + 0.6, min(cpus) - 0.6)
    ax.set_xlabel("time since the repetition started (10^6 guest TSC cycles)")
    for label, c in (("off-CPU (host timeline)", "#777777"), ("wait, holder off-CPU", COLORS["off"]),
                     ("wait, holder running", COLORS["on"]), ("wait, unknown", COLORS["unknown"])):
        ax.plot([], [], color=c, lw=6, label=label)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, fontsize=7, frameon=False)
    ax.set_title(f"{TITLE}: {snap.phase} r{snap.rep}, {len(waits)} waits >= {threshold} cycles")
    return save(fig, outdir, NAME, TITLE, f"Repetition {snap.phase} r{snap.rep}, chosen for having the most "
                "long waits. Upper bar in a row: off-CPU; lower bar: a wait by that CPU.")
