"""Lock-holder preemption: for how much of a long wait was the holder's vCPU off-CPU? (pure)

Two sources, as in the architecture page. The guest's own class (from KVM steal time) is used
when it is not 'unknown'; where the timeline and clock exist too, that wait is also measured on
the timeline and the two classes are counted against each other ('agreement': guest class ->
timeline class -> waits, once with the thresholds below and once with the guest's own rule,
any off time at all). Otherwise the wait, timed in guest TSC, is mapped to host TSC with the
clock correlation (clock.json) and measured against the host timeline of vCPU run intervals:

- off cycles: the cycles of the wait during which the vCPU was 'off' or 'frozen' (the union
  of its intervals; overlapping off and frozen rows count once). Time the timeline marks
  'unknown' (a switch the host kernel did not trace) may have been either: it counts as on for
  the least and as off for the most off cycles, so a class that depends on it is 'uncertain';
- the clock mapping is only good to +-e host cycles (clock.json's bound for that stretch of
  the run), so the off cycles are known only as a range: at least those inside [a+e, b-e),
  at most those inside [a-e, b+e) (any placement of the true window lies between);
- thresholds (THRESHOLDS): the holder was off when its off cycles are at least HOLDER_OFF_MIN
  of the wait, on when below it; likewise the waiter with WAITER_OFF_MIN. A side whose range
  straddles its threshold makes the wait 'uncertain': its class would depend on where inside
  the clock's bound the wait really lies;
- the holder may change during a test-and-set wait: the guest records the holder at the start
  and at the end. When they differ, the holder is the first up to an unknown moment and the
  second after it; the off cycles are then the range over every such moment.

A wait whose vCPUs' timeline does not cover [a-e, b+e), whose holder is not known, or that the
clock cannot place (outside the sampled span) is 'unknown'. Shares leave out unknown waits and
those whose holder side is uncertain (a wait whose waiter side alone straddles its threshold is
class 'uncertain' but counts as holder off or on), and say how many there were. Guest CPU n is
vCPU n in the timeline (the runner checks this against QEMU's APIC ids).
"""
import numpy as np

from .contract import OFF_STATES, UNKNOWN_STATE

HOLDER_OFF = ("holder-preempted", "both")
# A side counts as off-CPU for the wait when it was off for at least this share of the wait.
HOLDER_OFF_MIN = 0.5
WAITER_OFF_MIN = 0.5
THRESHOLDS = {"holder_off_min_fraction": HOLDER_OFF_MIN, "waiter_off_min_fraction": WAITER_OFF_MIN}
# Holder-off fraction histogram (summary.json, report): fraction bins and wait-length octaves.
FRACTION_EDGES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0000001)


class ClockMap:
    """guest TSC -> (host TSC, bound) from clock.json.

    With 'points' ([guest_tsc, host - guest, half bracket] per kept sample): linear between
    points, bound max(half brackets) + |offset change| of the segment, no mapping outside.
    Without points (a straight line only): the stated 'bound_max_cycles', else no bound at all,
    so every timeline class is 'uncertain' rather than guessed.
    """

    def __init__(self, clock: dict):
        self.clock = clock
        pts = clock.get("points") or []
        self.g = np.array([p[0] for p in pts], dtype=np.float64)
        self.off = np.array([p[1] for p in pts], dtype=np.float64)
        self.hw = np.array([p[2] for p in pts], dtype=np.float64)
        self.line_bound = float(clock["bound_max_cycles"]) if clock.get("bound_max_cycles") is not None else np.inf

    def map(self, guest_tsc: float) -> tuple[float, float]:
        """(host TSC, bound in host cycles); bound is inf where the clock cannot place the time."""
        g = float(guest_tsc)
        if len(self.g) >= 2:
            if g < self.g[0] or g > self.g[-1]:
                return g + float(self.off[0] if g < self.g[0] else self.off[-1]), np.inf
            i = int(np.searchsorted(self.g, g, side="right"))
            i = min(max(i, 1), len(self.g) - 1)
            t = (g - self.g[i - 1]) / (self.g[i] - self.g[i - 1])
            off = self.off[i - 1] + t * (self.off[i] - self.off[i - 1])
            bound = max(self.hw[i - 1], self.hw[i]) + abs(self.off[i] - self.off[i - 1])
            return g + off, float(bound)
        return float(guest_to_host(g, self.clock)), self.line_bound


def guest_to_host(guest_tsc, clock: dict):
    """The straight-line summary: host = guest + offset + (guest - ref) * drift_ppm / 1e6."""
    g = np.asarray(guest_tsc, dtype=np.float64)
    return g + clock["offset_cycles"] + (g - clock["ref_guest_tsc"]) * clock["drift_ppm"] * 1e-6


def _union(g, states) -> tuple:
    """The union of g's rows in these states as sorted disjoint (starts, ends), with the cumulative
    cycles before each start."""
    rows = g[g["state"].isin(states)].sort_values("start_host_tsc")
    starts, ends = [], []
    for a, b in zip(rows["start_host_tsc"].to_numpy(dtype=np.float64), rows["end_host_tsc"].to_numpy(dtype=np.float64)):
        if starts and a <= ends[-1]:
            ends[-1] = max(ends[-1], b)
        elif b > a:
            starts.append(a), ends.append(b)
    s, e = np.array(starts), np.array(ends)
    before = np.concatenate(([0.0], np.cumsum(e - s)[:-1])) if len(s) else s
    return s, e, before


def off_index(timeline, phase: str | None = None, rep: int | None = None) -> dict:
    """Per vCPU: the union of its off intervals as sorted disjoint (starts, ends), the cumulative
    off cycles before each start, the span the timeline covers, and the same union with the
    'unknown' intervals added (the most the vCPU may have been off)."""
    df = timeline
    if phase is not None:
        df = df[(df["phase"] == phase) & (df["rep"] == rep)]
    index = {}
    for vcpu, g in df.groupby("vcpu"):
        s, e, before = _union(g, OFF_STATES)
        index[int(vcpu)] = (s, e, before, float(g["start_host_tsc"].min()), float(g["end_host_tsc"].max()),
                            _union(g, OFF_STATES + (UNKNOWN_STATE,)))
    return index


def _off_until(entry, t: float) -> float:
    """Off cycles of this vCPU before host time t (entry: starts, ends, cumulative)."""
    s, e, before = entry[0], entry[1], entry[2]
    i = int(np.searchsorted(s, t, side="right")) - 1
    if i < 0:
        return 0.0
    return float(before[i] + min(t, e[i]) - s[i])


def off_cycles(index: dict, vcpu: int | None, a: float, b: float, most: bool = False) -> float | None:
    """Cycles of [a, b) the vCPU was off-CPU; None if unknown (no such vCPU, or not covered).
    Time the timeline marks 'unknown' counts as on, or as off when most is True: the least and
    the most the vCPU may have been off."""
    if vcpu is None or vcpu not in index:
        return None
    entry = index[vcpu]
    if a < entry[3] or b > entry[4]:
        return None
    if b <= a:
        return 0.0
    union = entry[5] if most else entry
    return _off_until(union, b) - _off_until(union, a)


def off_during(index: dict, vcpu: int | None, a: float, b: float) -> bool | None:
    """True if the vCPU was surely off-CPU at some time in [a, b), False if it surely ran
    throughout, None if unknown."""
    least, most = off_cycles(index, vcpu, a, b), off_cycles(index, vcpu, a, b, most=True)
    if least is None:
        return None
    return True if least > 0 else False if most == 0 else None


def _breakpoints(index: dict, vcpus, a: float, b: float) -> list:
    pts = [a, b]
    for v in vcpus:
        for s, e in ((index[v][0], index[v][1]), (index[v][5][0], index[v][5][1])):
            lo, hi = np.searchsorted(e, a), np.searchsorted(s, b)
            pts += [x for x in np.concatenate((s[lo:hi], e[lo:hi])) if a < x < b]
    return pts


def holder_off_range(index: dict, holders: list, a: float, b: float, e: float) -> tuple[float, float] | None:
    """(least, most) off cycles of the holder over the wait [a, b) placed anywhere within +-e,
    the holder being holders[0] and then, from an unknown moment, holders[-1]. Unknown timeline
    time counts as on for the least and as off for the most."""
    first, last = holders[0], holders[-1]
    if off_cycles(index, first, a - e, b + e) is None or off_cycles(index, last, a - e, b + e) is None:
        return None

    def extreme(lo: float, hi: float, pick, most: bool) -> float:
        if hi <= lo:
            return 0.0
        if first == last:
            return off_cycles(index, first, lo, hi, most)
        # off_first(lo, s) + off_last(s, hi) is piecewise linear in the switch moment s:
        # its extremes lie at the interval edges of either vCPU.
        return pick(off_cycles(index, first, lo, s, most) + off_cycles(index, last, s, hi, most)
                    for s in _breakpoints(index, (first, last), lo, hi))

    return extreme(a + e, b - e, min, False), min(extreme(a - e, b + e, max, True), b - a)


def off_range(index: dict, vcpu: int, a: float, b: float, e: float) -> tuple[float, float] | None:
    return holder_off_range(index, [vcpu], a, b, e)


def _side(rng, wait: float, threshold: float) -> str | None:
    lo, hi = rng
    if lo >= threshold * wait:
        return "off"
    if hi < threshold * wait:
        return "on"
    return None  # straddles the threshold


def _any_side(rng) -> str | None:
    """The guest's own rule (any steal during the wait): off if surely off at all, on if surely never."""
    lo, hi = rng
    return "off" if lo > 0 else "on" if hi == 0 else None


def holders_of(wait: dict) -> list | None:
    """The holders in order: [start] or [start, end] when the holder changed; None if unknown."""
    h0, h1 = wait.get("holder_cpu"), wait.get("holder_end_cpu")
    if h0 is None and h1 is None:
        return None
    if h0 is None or h1 is None or h0 == h1:
        return [h0 if h0 is not None else h1]
    return [h0, h1]


def measure(wait: dict, index: dict, cmap: ClockMap, any_overlap: bool = False) -> dict:
    """Host-timeline measurement of one wait: the class and what it rests on. any_overlap: a
    side is off if it was off at all during the wait (the rule of the guest's steal-time class,
    for comparing the two), instead of the THRESHOLDS."""
    w = float(wait["wait_cycles"])
    a, bound = cmap.map(wait["start_tsc"])
    out = {"host_start": a, "bound_cycles": bound if np.isfinite(bound) else None, "holder_off_cycles": None,
           "waiter_off_cycles": None, "holders": holders_of(wait), "holder_side": None}
    if not np.isfinite(bound) or out["holders"] is None:
        return {**out, "lhp": "unknown"}
    b = a + w
    h = holder_off_range(index, out["holders"], a, b, bound)
    wr = off_range(index, wait["cpu"], a, b, bound)
    if h is None or wr is None:
        return {**out, "lhp": "unknown"}
    out["holder_off_cycles"], out["waiter_off_cycles"] = list(h), list(wr)
    if any_overlap:
        holder, waiter = _any_side(h), _any_side(wr)
    else:
        holder, waiter = _side(h, w, HOLDER_OFF_MIN), _side(wr, w, WAITER_OFF_MIN)
    out["holder_side"] = holder
    if holder is None or waiter is None:
        return {**out, "lhp": "uncertain"}
    cls = {("off", "off"): "both", ("off", "on"): "holder-preempted",
           ("on", "off"): "waiter-preempted", ("on", "on"): "neither"}[(holder, waiter)]
    return {**out, "lhp": cls}


def classify(wait: dict, index: dict | None, clock: dict | None) -> tuple[str, str]:
    """(lhp class, source) of one long wait; source is 'guest', 'timeline' or 'none'."""
    if wait["lhp_class"] != "unknown":
        return wait["lhp_class"], "guest"
    if index is None or clock is None:
        return "unknown", "none"
    cls = measure(wait, index, ClockMap(clock))["lhp"]
    return cls, "none" if cls == "unknown" else "timeline"


def fraction_table(waits: list) -> dict:
    """Holder-off fraction against wait length, over timeline-measured waits: for each wait-length
    octave (2^k cycles), the count of waits per holder-off-fraction bin (by the fraction's middle
    estimate, the midpoint of its range)."""
    table = {}
    for w in waits:
        h = w.get("holder_off_cycles")
        if h is None:
            continue
        frac = min(1.0, (h[0] + h[1]) / 2 / w["wait_cycles"])
        k = int(w["wait_cycles"]).bit_length() - 1
        row = table.setdefault(f"2^{k}", [0] * (len(FRACTION_EDGES) - 1))
        row[int(np.searchsorted(FRACTION_EDGES, frac, side="right")) - 1] += 1
    return {"fraction_edges": [round(x, 2) for x in FRACTION_EDGES[:-1]] + [1.0],
            "by_wait_octave": dict(sorted(table.items(), key=lambda kv: int(kv[0][2:])))}


def long_waits_share(snaps, timeline, clock, threshold: int) -> dict:
    """Classify every long wait (>= threshold) of these snapshots and count holder-off ones.

    share = holder off / (waits whose holder state is known and certain); None when none is.
    """
    out = {"long_waits": 0, "holder_off": 0, "holder_on": 0, "uncertain": 0, "unknown": 0,
           "from_guest": 0, "from_timeline": 0, "holder_changed": 0, "share": None,
           "snapshots_without_list": 0, "dropped": 0, "thresholds": dict(THRESHOLDS), "waits": [],
           "agreement": {"guest_vs_timeline": {}, "guest_vs_timeline_any_overlap": {}}}
    cmap = ClockMap(clock) if clock is not None else None
    for s in snaps:
        if s.long_waits is None:
            out["snapshots_without_list"] += 1
            continue
        out["dropped"] += int(s.long_waits_dropped)
        index = off_index(timeline, s.phase, s.rep) if timeline is not None else None
        for w in s.long_waits:
            if w["wait_cycles"] < threshold:
                continue
            m = {"lhp": "unknown", "host_start": None, "bound_cycles": None, "holder_off_cycles": None, "waiter_off_cycles": None,
                 "holders": holders_of(w), "holder_side": None}
            if w["lhp_class"] != "unknown":
                m["lhp"], source = w["lhp_class"], "guest"
                m["holder_side"] = "off" if w["lhp_class"] in HOLDER_OFF else "on"
                if index is not None and cmap is not None:
                    # Both sources for this wait: how often the host timeline agrees with the
                    # guest's steal time, by the thresholds and by the guest's own rule.
                    for key, any_overlap in (("guest_vs_timeline", False), ("guest_vs_timeline_any_overlap", True)):
                        t = measure(w, index, cmap, any_overlap)["lhp"]
                        row = out["agreement"][key].setdefault(w["lhp_class"], {})
                        row[t] = row.get(t, 0) + 1
                        if not any_overlap:
                            m["timeline_lhp"] = t
            elif index is not None and cmap is not None:
                m = measure(w, index, cmap)
                source = "none" if m["lhp"] == "unknown" else "timeline"
            else:
                source = "none"
            cls = m["lhp"]
            out["long_waits"] += 1
            if source != "none":
                out["from_" + source] += 1
            if m["holders"] is not None and len(m["holders"]) > 1:
                out["holder_changed"] += 1
            # The share is about the holder: a wait whose holder side is certain counts even
            # when its waiter side (and so its class) is uncertain.
            side = m["holder_side"]
            key = "unknown" if cls == "unknown" else {"off": "holder_off", "on": "holder_on"}.get(side, "uncertain")
            out[key] += 1
            out["waits"].append({**w, "rep": s.rep, **m, "source": source})
    known = out["holder_off"] + out["holder_on"]
    out["share"] = out["holder_off"] / known if known else None
    out["holder_off_fraction"] = fraction_table(out["waits"])
    return out
