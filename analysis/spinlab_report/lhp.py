"""Lock-holder preemption: was the holder's vCPU off-CPU during a long wait? (pure)

Two sources, as in the architecture page. The guest's own class (from KVM steal time) is used
when it is not 'unknown'. Otherwise the wait, timed in guest TSC, is mapped to host TSC with the
clock correlation and compared with the host timeline of vCPU run intervals: the holder (or
waiter) counts as off-CPU when any of its 'off' or 'frozen' intervals overlaps the wait. If the
wait lies outside the span the timeline covers for that vCPU, or the holder CPU is not known,
the wait stays 'unknown' and is left out of the share's denominator.
Guest CPU n is vCPU n in the timeline.
"""
import numpy as np

from .contract import OFF_STATES

HOLDER_OFF = ("holder-preempted", "both")


def guest_to_host(guest_tsc, clock: dict):
    """host = guest + offset + (guest - ref) * drift_ppm / 1e6 (see README, clock.json)."""
    g = np.asarray(guest_tsc, dtype=np.float64)
    return g + clock["offset_cycles"] + (g - clock["ref_guest_tsc"]) * clock["drift_ppm"] * 1e-6


def off_index(timeline, phase: str | None = None, rep: int | None = None) -> dict:
    """Per vCPU: sorted off-interval starts, the running maximum of their ends, and the covered span.

    With the running maximum, "some off interval overlaps [a, b)" is one binary search, whatever
    the intervals' overlaps among themselves.
    """
    df = timeline
    if phase is not None:
        df = df[(df["phase"] == phase) & (df["rep"] == rep)]
    index = {}
    for vcpu, g in df.groupby("vcpu"):
        off = g[g["state"].isin(OFF_STATES)].sort_values("start_host_tsc")
        starts = off["start_host_tsc"].to_numpy(dtype=np.float64)
        ends = np.maximum.accumulate(off["end_host_tsc"].to_numpy(dtype=np.float64)) if len(off) else starts
        index[int(vcpu)] = (starts, ends, float(g["start_host_tsc"].min()), float(g["end_host_tsc"].max()))
    return index


def off_during(index: dict, vcpu: int | None, a: float, b: float) -> bool | None:
    """True if vCPU was off-CPU at some time in [a, b), False if it ran throughout, None if unknown."""
    if vcpu is None or vcpu not in index:
        return None
    starts, ends, lo, hi = index[vcpu]
    i = int(np.searchsorted(starts, b, side="left")) - 1
    if i >= 0 and ends[i] > a:
        return True
    return False if lo <= a and b <= hi else None


def classify(wait: dict, index: dict | None, clock: dict | None) -> tuple[str, str]:
    """(lhp class, source) of one long wait; source is 'guest', 'timeline' or 'none'."""
    if wait["lhp_class"] != "unknown":
        return wait["lhp_class"], "guest"
    if index is None or clock is None:
        return "unknown", "none"
    a = float(guest_to_host(wait["start_tsc"], clock))
    b = a + wait["wait_cycles"]
    holder = off_during(index, wait["holder_cpu"], a, b)
    if holder is None:
        return "unknown", "none"
    waiter = off_during(index, wait["cpu"], a, b)
    cls = {(True, True): "both", (True, False): "holder-preempted",
           (False, True): "waiter-preempted", (False, False): "neither"}[(holder, bool(waiter))]
    return cls, "timeline"


def long_waits_share(snaps, timeline, clock, threshold: int) -> dict:
    """Classify every long wait (>= threshold) of these snapshots and count holder-off ones.

    share = holder off / (waits whose holder state is known); None when no wait is attributable.
    """
    out = {"long_waits": 0, "holder_off": 0, "holder_on": 0, "unknown": 0, "from_guest": 0,
           "from_timeline": 0, "share": None, "snapshots_without_list": 0, "dropped": 0, "waits": []}
    for s in snaps:
        if s.long_waits is None:
            out["snapshots_without_list"] += 1
            continue
        out["dropped"] += int(s.long_waits_dropped)
        index = off_index(timeline, s.phase, s.rep) if timeline is not None else None
        for w in s.long_waits:
            if w["wait_cycles"] < threshold:
                continue
            cls, source = classify(w, index, clock)
            out["long_waits"] += 1
            if source != "none":
                out["from_" + source] += 1
            key = "unknown" if cls == "unknown" else ("holder_off" if cls in HOLDER_OFF else "holder_on")
            out[key] += 1
            out["waits"].append({**w, "rep": s.rep, "lhp": cls, "source": source})
    known = out["holder_off"] + out["holder_on"]
    out["share"] = out["holder_off"] / known if known else None
    return out
