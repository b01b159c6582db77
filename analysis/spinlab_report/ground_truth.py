"""Ground truth for the LHP measurement: waits against known freezes of one vCPU. (pure)

spinlab-load freeze freezes one vCPU on a schedule and records, per freeze, the effective
window: from the moment its thread was seen to stop to the moment it ran again (its own
sched_switch events, host TSC). Those windows are a record of their own, apart from the
timeline the classifier reads. Two sets of long waits on another vCPU whose holder is the
frozen vCPU (the same holder at start and end):

- frozen: the effective freezes cover more than half of the wait, wherever inside the clock's
  bound it lies. Each must be classed holder-off (holder-preempted, or both when the waiter
  too was off for half of it, or uncertain on the waiter's side only).
- running: no freeze touches the wait (with the bound) and the timeline shows the holder's
  vCPU on-CPU for at least RUNNING_MIN_ON of it. Each must be classed holder-on.

And one set for the waiter's side: long waits *on* the frozen vCPU that its effective freezes
cover for more than half of the wait (the waiter was frozen while it spun; any holder). Each must
be classed waiter-off (waiter-preempted, or both when the holder too was off for half of it, or
uncertain on the holder's side only).

The sets are judged on the final attribution (attribution.py: per side the timeline where
it covers, else steal time's 'off'), whichever source decided; a wait is in a set when the clock
places it on the host (bound_cycles known), whatever its class. Both sets are chosen through the
clock mapping, and so is the class: a clock that is wrong by
a constant moves a wait and its verdict together, and neither set notices. The clock has its
own ground truth (stamps_off_cpu): a long wait begins and ends with TSC reads by the waiting
vCPU, which cannot happen while its thread is stopped or descheduled; mapped to the host, no
such stamp may fall inside the frozen vCPU's effective freezes, nor inside an off interval of
the timeline, by more than the bound.
"""
import bisect

from .lhp import HOLDER_OFF, WAITER_OFF, ClockMap
from .names import LHP_CLASS

# The running set: the holder on-CPU for at least this share of the wait by the timeline (the
# holder-off threshold is 1/2, so a correct classifier never calls these holder-off).
RUNNING_MIN_ON = 0.9


def covered(windows: list, a: float, b: float) -> float:
    """Cycles of [a, b) inside the union of the (start, end) windows."""
    total, last = 0.0, a
    for s, e in sorted(windows):
        s, e = max(s, last), min(e, b)
        if e > s:
            total += e - s
            last = e
    return total


def rates(waits: list, windows: list, frozen_vcpu: int) -> dict:
    """waits: classified long waits (attribution.long_waits_share(...)["waits"]), windows: effective
    freezes of frozen_vcpu as (start, end) host TSC."""
    out = {"frozen": 0, "frozen_holder_off": 0, "frozen_holder_preempted": 0, "frozen_classes": {},
           "running": 0, "running_holder_off": 0, "running_classes": {},
           "frozen_waiter": 0, "frozen_waiter_off": 0, "frozen_waiter_classes": {}}
    for w in waits:
        if w.get("bound_cycles") is None:  # the clock cannot place it: no set can hold it
            continue
        a, e, n = float(w["host_start"]), float(w["bound_cycles"]), float(w["wait_cycles"])
        if w["cpu"] == frozen_vcpu:
            if covered(windows, a + e, a + n - e) > n / 2:
                out["frozen_waiter"] += 1
                out["frozen_waiter_classes"][w["cause"]] = out["frozen_waiter_classes"].get(w["cause"], 0) + 1
                if w["cause"] in WAITER_OFF or w.get("waiter_side") == "off":
                    out["frozen_waiter_off"] += 1
            continue
        if w.get("holders") != [frozen_vcpu]:
            continue
        if covered(windows, a + e, a + n - e) > n / 2:
            key = "frozen"
        elif covered(windows, a - e, a + n + e) == 0 and w["holder_off_cycles"] is not None \
                and w["holder_off_cycles"][1] <= (1 - RUNNING_MIN_ON) * n:
            key = "running"
        else:
            continue
        out[key] += 1
        out[key + "_classes"][w["cause"]] = out[key + "_classes"].get(w["cause"], 0) + 1
        if w.get("holder_side") == "off" or w["cause"] in HOLDER_OFF:
            out[key + "_holder_off"] += 1
        if key == "frozen" and w["cause"] == LHP_CLASS.kHolderPreempted:
            out["frozen_holder_preempted"] += 1
    out["frozen_rate"] = out["frozen_holder_off"] / out["frozen"] if out["frozen"] else None
    out["running_rate"] = out["running_holder_off"] / out["running"] if out["running"] else None
    out["frozen_waiter_rate"] = out["frozen_waiter_off"] / out["frozen_waiter"] if out["frozen_waiter"] else None
    return out


def effective_windows(freeze_csv_text: str, vcpu: int) -> list:
    """(stopped_tsc, resumed_tsc) of the freezes of `vcpu` whose effective window was measured,
    from the text of a freeze record (freezes/<phase>-r<rep>.csv)."""
    lines = [l for l in freeze_csv_text.splitlines() if l.strip()]
    if not lines:
        return []
    head = lines[0].split(",")
    col = {name: i for i, name in enumerate(head)}
    out = []
    for l in lines[1:]:
        f = l.split(",")
        if int(f[col["vcpu"]]) == vcpu and f[col["effective"]] == "ok":
            out.append((float(f[col["stopped_tsc"]]), float(f[col["resumed_tsc"]])))
    return out




def stamps_off_cpu(waits: list, off: dict, clock: dict, slack: float = 0.0) -> dict:
    """The clock against a record of when each vCPU could not run: the start and end stamps of
    the long waits are TSC reads by the waiting vCPU, which cannot happen while its thread is
    stopped or descheduled. off: vCPU -> its disjoint (start, end) host-TSC windows (the
    effective freezes, or the timeline's off intervals). Counts the mapped stamps of those vCPUs
    and those that fall inside a window by more than the bound plus `slack` cycles;
    worst_cycles is the deepest beyond the bound."""
    cmap = ClockMap(clock)
    wins = {v: sorted(ws) for v, ws in off.items()}
    starts = {v: [a for a, _ in ws] for v, ws in wins.items()}
    out = {"stamps": 0, "inside": 0, "worst_cycles": 0.0}
    for w in waits:
        v = w["cpu"]
        if v not in wins:
            continue
        for g in (w["start_tsc"], w["start_tsc"] + w["wait_cycles"]):
            t, e = cmap.map(g)
            if e == float("inf"):
                continue
            out["stamps"] += 1
            i = bisect.bisect_right(starts[v], t) - 1
            if i < 0:
                continue
            a, b = wins[v][i]
            depth = min(t - a, b - t) - e
            if depth > 0:
                out["worst_cycles"] = max(out["worst_cycles"], depth)
            if depth > slack:
                out["inside"] += 1
    return out


def timeline_off_windows(index: dict) -> dict:
    """lhp.off_index(...) -> vCPU -> its off windows, for stamps_off_cpu."""
    return {v: list(zip(entry[0].tolist(), entry[1].tolist())) for v, entry in index.items()}
