"""Ground truth for the LHP measurement: waits against known freezes of one vCPU. (pure)

spinlab-load preempt freezes one vCPU on a schedule and records, per freeze, the effective
window: from the moment its thread was seen to stop to the moment it ran again (its own
sched_switch events, host TSC). Those windows are facts independent of the timeline the
classifier reads. Two sets of long waits on another vCPU whose holder is the frozen vCPU
(the same holder at start and end):

- frozen: the effective freezes cover more than half of the wait, wherever inside the clock's
  bound it lies. Each must be classed holder-off (holder-preempted, or both when the waiter
  too was off for half of it).
- running: no freeze touches the wait (with the bound) and the timeline shows the holder's
  vCPU on-CPU throughout. Each must be classed holder-on.
"""
from .lhp import HOLDER_OFF


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
    """waits: classified long waits (lhp.long_waits_share(...)["waits"]), windows: effective
    freezes of frozen_vcpu as (start, end) host TSC."""
    out = {"frozen": 0, "frozen_holder_off": 0, "frozen_holder_preempted": 0, "frozen_classes": {},
           "running": 0, "running_holder_off": 0, "running_classes": {}}
    for w in waits:
        if w.get("source") != "timeline":
            continue
        if w["cpu"] == frozen_vcpu or w.get("holders") != [frozen_vcpu] or w.get("bound_cycles") is None:
            continue
        a, e, n = float(w["host_start"]), float(w["bound_cycles"]), float(w["wait_cycles"])
        if covered(windows, a + e, a + n - e) > n / 2:
            key = "frozen"
        elif covered(windows, a - e, a + n + e) == 0 and w["holder_off_cycles"] is not None \
                and w["holder_off_cycles"][1] == 0:
            key = "running"
        else:
            continue
        out[key] += 1
        out[key + "_classes"][w["lhp"]] = out[key + "_classes"].get(w["lhp"], 0) + 1
        if w["lhp"] in HOLDER_OFF:
            out[key + "_holder_off"] += 1
        if key == "frozen" and w["lhp"] == "holder-preempted":
            out["frozen_holder_preempted"] += 1
    out["frozen_rate"] = out["frozen_holder_off"] / out["frozen"] if out["frozen"] else None
    out["running_rate"] = out["running_holder_off"] / out["running"] if out["running"] else None
    return out


def effective_windows(preempt_csv_text: str, vcpu: int) -> list:
    """(stopped_tsc, resumed_tsc) of the freezes of `vcpu` whose effective window was measured."""
    lines = [l for l in preempt_csv_text.splitlines() if l.strip()]
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

