"""The per-wait definition of the LHP rules: the reference the package's array code is checked
against (test_rules_reference.py: random waits; test_scaling.py: synthetic runs), never called by the
package. The package has one implementation of each rule, over arrays: spinlab_report/waits.py
(`classify`, `count`, `fraction_table`); spinlab_report/lhp.py describes the rules in words and
holds what both share (the clock mapping, the interval unions, a wait's holders, the classes).

Each function here is the rule for one wait, written as plainly as it can be: measure (the host
timeline's off-cycle ranges of each side), attribute (each side's source and the class), _count
(the phase's counts), fraction_table, ended_inside. Their floating-point operations are those the
array code does, in the same order, so the two agree exactly.
"""
import numpy as np

from spinlab_report.lhp import (HOLDER_OFF_MIN, WAITER_OFF_MIN, FRACTION_EDGES, ClockMap, class_of, holders_of,
                                steal_sides)


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


def _extreme(index: dict, first: int, last: int, lo: float, hi: float, pick, most: bool) -> float:
    """Off cycles of [lo, hi) held by `first` and then, from a moment s, by `last`: the least
    (pick=min) or the most (pick=max) over every s in [lo, hi]."""
    if hi <= lo:
        return 0.0
    if first == last:
        return off_cycles(index, first, lo, hi, most)
    # off_first(lo, s) + off_last(s, hi) is piecewise linear in the switch moment s:
    # its extremes lie at the interval edges of either vCPU.
    return pick(off_cycles(index, first, lo, s, most) + off_cycles(index, last, s, hi, most)
                for s in _breakpoints(index, (first, last), lo, hi))


def pieces_off_range(index: dict, pieces: list, e: float, wait: float) -> tuple[float, float] | None:
    """(least, most) off cycles of the holder over a wait of `wait` cycles made of pieces
    (first, last, lo, hi) in host TSC: [lo, hi) held by `first`, or by `first` and then, from an
    unknown moment, by `last`. The whole wait may lie anywhere within +-e (each hand-over moves
    with it): the least counts each piece shrunk by e at both ends, the most widened by e.
    Unknown timeline time counts as on for the least and as off for the most. None when a
    holder's vCPU is not covered."""
    for first, last, lo, hi in pieces:
        if off_cycles(index, first, lo - e, hi + e) is None or off_cycles(index, last, lo - e, hi + e) is None:
            return None
    least = sum(_extreme(index, f, l, lo + e, hi - e, min, False) for f, l, lo, hi in pieces)
    most = sum(_extreme(index, f, l, lo - e, hi + e, max, True) for f, l, lo, hi in pieces)
    return least, min(most, wait)


def holder_off_range(index: dict, holders: list, a: float, b: float, e: float) -> tuple[float, float] | None:
    """(least, most) off cycles of the holder over the wait [a, b) placed anywhere within +-e,
    the holder being holders[0] and then, from an unknown moment, holders[-1]."""
    return pieces_off_range(index, [(holders[0], holders[-1], a, b)], e, b - a)


def off_range(index: dict, vcpu: int, a: float, b: float, e: float) -> tuple[float, float] | None:
    return holder_off_range(index, [vcpu], a, b, e)


def _side(rng, wait: float, threshold: float) -> str:
    lo, hi = rng
    if lo >= threshold * wait:
        return "off"
    if hi < threshold * wait:
        return "on"
    return "uncertain"  # straddles the threshold


def _any_side(rng) -> str:
    """The guest's own rule (any steal during the wait): off if surely off at all, on if surely never."""
    lo, hi = rng
    return "off" if lo > 0 else "on" if hi == 0 else "uncertain"


def holder_pieces(wait: dict) -> list | None:
    """The wait's holders as pieces (first, last, lo, hi), lo and hi in cycles from the wait's
    start: [lo, hi) held by `first`, or by `first` and then from an unknown moment by `last`.
    From "holds" ([cpu, from_tsc] in order, the first holding when the wait began; from_tsc null
    where the hand-over was not placed: one gap up to the next placed one), else from the guest's
    holders at start and end (one gap over the whole wait when they differ)."""
    w = float(wait["wait_cycles"])
    holds = wait.get("holds")
    if not holds:
        h = holders_of(wait)
        return None if h is None else [(h[0], h[-1], 0.0, w)]
    start = float(wait["start_tsc"])
    pieces, lo, first, last = [], 0.0, holds[0][0], holds[0][0]
    for cpu, frm in holds[1:]:
        if frm is None:
            last = cpu  # at an unknown moment, up to the next placed hand-over
            continue
        t = min(max(float(frm) - start, lo), w)
        pieces.append((first, last, lo, t))
        lo, first, last = t, cpu, cpu
    pieces.append((first, last, lo, w))
    return [p for p in pieces if p[3] > p[2]] or pieces[-1:]


def _holder_range(wait: dict, index: dict, a: float, bound: float, w: float, rule_cpus: int):
    """The holder's (least, most) off cycles: of its pieces; for a rule's wait whose holder is one of
    the other rule_cpus - 1 vCPUs, the most off of them (None where one is not covered)."""
    if wait.get("holder_by_rule") and rule_cpus > 2:
        ranges = [off_range(index, (wait["cpu"] + d) % rule_cpus, a, a + w, bound) for d in range(1, rule_cpus)]
        if any(r is None for r in ranges):
            return None
        return max(r[0] for r in ranges), max(r[1] for r in ranges)
    pieces = holder_pieces(wait)
    if pieces is None:
        return None
    return pieces_off_range(index, [(f, l, a + lo, a + hi) for f, l, lo, hi in pieces], bound, w)


def measure(wait: dict, index: dict, cmap: ClockMap, index_pre: dict | None = None, rule_cpus: int = 0) -> dict:
    """Host-timeline measurement of one wait: the off-cycle ranges of each side and the side each
    range gives, by the THRESHOLDS and by the guest's any-off-time rule (*_any). A side the
    timeline does not cover has range None and side 'unknown'. The same ranges counting only the
    time preempted or frozen (index_pre, the timeline without its blocked rows) are in
    "preempted": they tell a holder off only while blocked ("holder_side_timeline")."""
    w = float(wait["wait_cycles"])
    a, bound = cmap.map(wait["start_tsc"])
    out = {"host_start": a, "bound_cycles": bound if np.isfinite(bound) else None, "holder_off_cycles": None,
           "waiter_off_cycles": None, "holders": holders_of(wait)}
    pre = index if index_pre is None else index_pre
    h = wr = hp = wp = None
    if np.isfinite(bound):
        h = _holder_range(wait, index, a, bound, w, rule_cpus)
        hp = _holder_range(wait, pre, a, bound, w, rule_cpus)
        wr = off_range(index, wait["cpu"], a, a + w, bound)
        wp = off_range(pre, wait["cpu"], a, a + w, bound)
    out["holder_off_cycles"] = None if h is None else list(h)
    out["waiter_off_cycles"] = None if wr is None else list(wr)
    for name, rng, th in (("holder", h, HOLDER_OFF_MIN), ("waiter", wr, WAITER_OFF_MIN)):
        out[f"timeline_{name}"] = "unknown" if rng is None else _side(rng, w, th)
        out[f"timeline_{name}_any"] = "unknown" if rng is None else _any_side(rng)
    out["timeline_class"] = class_of(out["timeline_holder"], out["timeline_waiter"])
    # not row fields: what the attribution and the counts read besides
    side = out["timeline_holder"]
    pre_side = "unknown" if hp is None else _side(hp, w, HOLDER_OFF_MIN)
    if side == "off" and pre_side == "on":
        side = "blocked"  # off only while its thread blocked by itself
    elif side == "off" and pre_side == "uncertain":
        side = "uncertain"
    if side == "off" and wait.get("holder_by_rule") and rule_cpus > 2:
        side = "possibly_off"
    out["preempted"] = {"holder": hp, "waiter": wp, "holder_side_timeline": side}
    return out


def combine(timeline_side: str, steal_off: bool | None) -> tuple[str, str, bool]:
    """(side, source, disagreement) of one side: the timeline decides where it covers the side;
    elsewhere steal time decides 'off' only. A disagreement: the timeline decided (on or off)
    and steal time, known, says otherwise."""
    if timeline_side != "unknown":
        disagree = steal_off is not None and timeline_side in ("on", "off") and steal_off != (timeline_side == "off")
        return timeline_side, "timeline", disagree
    if steal_off:
        return "off", "steal", False
    return "unknown", "none", False


def attribute(wait: dict, m: dict | None) -> dict:
    """The wait's final attribution from the timeline measurement m (None: no timeline or clock)
    and its steal-time class: per side the side and its source, the class, the disagreements."""
    steal = steal_sides(wait["lhp_class"])
    out = {}
    for i, name in enumerate(("holder", "waiter")):
        side, source, disagree = combine(m[f"timeline_{name}"] if m else "unknown", steal[i])
        if name == "holder" and m and source == "timeline":
            side = m["preempted"]["holder_side_timeline"]
        out[f"{name}_side"], out[f"{name}_source"], out[f"{name}_disagrees"] = side, source, disagree
    out["cause"] = class_of(out["holder_side"], out["waiter_side"])
    return out


def classify(wait: dict, index: dict | None, clock: dict | None) -> tuple[str, str]:
    """(lhp class, the holder side's source: 'timeline', 'steal' or 'none') of one long wait."""
    m = measure(wait, index, ClockMap(clock)) if index is not None and clock is not None else None
    r = attribute(wait, m)
    return r["cause"], r["holder_source"]


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


def _count(out: dict, w: dict, m: dict | None, r: dict):
    """Adds one attributed wait (measurement m, attribution r) to the counts of out."""
    out["long_waits"] += 1
    out[{"off": "holder_off", "on": "holder_on", "blocked": "holder_blocked",
         "possibly_off": "possibly_preempted"}.get(r["holder_side"], r["holder_side"])] += 1
    if m is not None and "preempted" in m:
        for side, rng in (("holder", m["holder_off_cycles"]), ("waiter", m["waiter_off_cycles"])):
            pre = m["preempted"][side]
            if rng is not None and pre is not None:
                off, p = (rng[0] + rng[1]) / 2, (pre[0] + pre[1]) / 2
                out["off_cycles"][side]["off"] += off
                out["off_cycles"][side]["blocked"] += max(0.0, off - p)
    if r["holder_source"] != "none":
        out["from_guest" if r["holder_source"] == "steal" else "from_timeline"] += 1
    holders = m["holders"] if m else holders_of(w)
    if holders is not None and len(holders) > 1:
        out["holder_changed"] += 1
    for _, frm in (w.get("holds") or [])[1:]:
        out["handovers_placed" if frm is not None else "handovers_unplaced"] += 1
    d, steal = out["disagreements"], steal_sides(w["lhp_class"])
    for i, side in enumerate(("holder", "waiter")):
        out["sources"][side][r[f"{side}_source"]] += 1
        if r[f"{side}_source"] == "timeline" and steal[i] is not None and r[f"{side}_side"] in ("on", "off"):
            d["sides_compared"] += 1
        if r[f"{side}_disagrees"]:
            d["total"] += 1
            d[side] += 1
            d["steal_off_timeline_on" if steal[i] else "steal_silent_timeline_off"] += 1
    if m is not None and w["lhp_class"] != "unknown":
        # Both sources for this wait: the guest's class against the timeline's, by the
        # thresholds and by the guest's own rule (any off time), from the one measurement.
        any_cls = class_of(m["timeline_holder_any"], m["timeline_waiter_any"])
        for key, t in (("guest_vs_timeline", m["timeline_class"]), ("guest_vs_timeline_any_overlap", any_cls)):
            row = out["agreement"][key].setdefault(w["lhp_class"], {})
            row[t] = row.get(t, 0) + 1


def ended_inside(w: dict, snap) -> bool:
    """Whether the wait ended inside the repetition (its start to end snapshot, guest TSC), where
    the counters took it. The trace session that lists the waits runs a little longer (it stops
    after the end snapshot; under nested KVM, seconds longer), so the list can hold waits the
    counters never saw; True when the repetition's TSC span is not known."""
    a, b = getattr(snap, "start_guest_tsc", None), getattr(snap, "end_guest_tsc", None)
    return a is None or b is None or a <= w["start_tsc"] + w["wait_cycles"] <= b
