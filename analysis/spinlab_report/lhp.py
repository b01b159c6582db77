"""Lock-holder preemption: for how much of a long wait was the holder's vCPU off-CPU? (pure)

Two sources, combined per side of each wait (the holder's and the waiter's):

- the host timeline (timeline.csv, joined through clock.json): where it covers a side, it
  decides that side, on-CPU or off-CPU, by the thresholds below (or leaves it 'uncertain');
- the guest's steal-time class (lhp_class, from KVM steal time and the preempted flag, "any
  time lost during the wait"): evidence of 'off' only, never of 'on'. Steal time counts only
  the time a vCPU thread was runnable but waiting; a vCPU thread that is frozen, sleeping or
  blocked on the host accrues none, and KVM writes it into guest memory only at the vCPU's next
  entry, so it is stale during the wait. So where the timeline does not cover a side, steal time
  saying 'off' makes it off; saying nothing (or 'unknown') leaves the side 'unknown'.

Each wait records the source that decided each side (holder_source, waiter_source: 'timeline',
'steal' or 'none'); where both exist and the timeline decided, a side on which steal time says
otherwise is a disagreement (counted in 'disagreements'). A side no source can place is
'unknown', never guessed; a wait with an unknown side has class 'unknown', one with an
uncertain side (and none unknown) 'uncertain'. The share counts by the holder's side alone.

The timeline measurement: the wait, timed in guest TSC, is mapped to host TSC with the clock
correlation (clock.json) and measured against the host timeline of vCPU run intervals:

- off cycles: the cycles of the wait during which the vCPU was 'off' or 'frozen' (the union
  of its intervals; overlapping off and frozen rows count once). Time the timeline marks
  'unknown' (a switch the host kernel did not trace) may have been either: it counts as on for
  the least and as off for the most off cycles, so a class that depends on it is 'uncertain';
- the clock mapping is only good to +-e host cycles (clock.json's bound for that stretch of
  the run), so the off cycles are known only as a range: at least those inside [a+e, b-e),
  at most those inside [a-e, b+e) (any placement of the true window lies between);
- thresholds (THRESHOLDS): the holder was off when its off cycles are at least HOLDER_OFF_MIN
  of the wait, on when below it; likewise the waiter with WAITER_OFF_MIN. A side whose range
  straddles its threshold is 'uncertain': it would depend on where inside the clock's bound
  the wait really lies, or on untraced time;
- the holder may change during a wait (a queue: several CPUs hold the lock in turn). The runner
  places each hand-over from the trace's hold events ("holds": [[cpu, from_tsc], ...], see
  analysis/README.md), and each holder's off cycles count only while it held the lock. Where a
  hand-over's moment is not known (its hold was not traced, or a list without "holds": the
  guest's holder at the start and at the end only), the holder is the one before up to an
  unknown moment and the one after from it, and that gap's off cycles are the range over every
  such moment.

A side whose vCPU(s) the timeline does not cover over [a-e, b+e), whose holder is not known, or
that the clock cannot place (outside the sampled span) is not covered by the timeline. Guest CPU
n is vCPU n in the timeline (the runner checks this against QEMU's APIC ids). Each wait is
measured once; the agreement tables (guest class against the timeline's class, by the
thresholds and by the guest's any-off-time rule) use the same ranges.
"""
import numpy as np

from .contract import OFF_STATES, UNKNOWN_STATE
from .names import LHP_CLASS as L

HOLDER_OFF = (L.kHolderPreempted, L.kBoth)  # the guest's classes in which the holder lost time
WAITER_OFF = (L.kWaiterPreempted, L.kBoth)
UNCERTAIN = "uncertain"  # the analysis' own class: a side straddles its threshold (never the guest's)
# Every class a measured wait may have: the guest's (the ABI's, in its order) and UNCERTAIN.
CLASSES = L.names + (UNCERTAIN,)
SOURCES = ("timeline", "steal", "none")
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
        host, bound = host_map(self, np.array([float(guest_tsc)]))
        return float(host[0]), float(bound[0])


def guest_to_host(guest_tsc, clock: dict):
    """The straight-line summary: host = guest + offset + (guest - ref) * drift_ppm / 1e6."""
    g = np.asarray(guest_tsc, dtype=np.float64)
    return g + clock["offset_cycles"] + (g - clock["ref_guest_tsc"]) * clock["drift_ppm"] * 1e-6


def host_map(cmap, guest) -> tuple:
    """ClockMap.map over an array: (host TSC, bound), the bound inf where the clock cannot place
    the time. ClockMap.map is this for one time."""
    g = np.asarray(guest, dtype=np.float64)
    if len(cmap.g) >= 2:
        i = np.clip(np.searchsorted(cmap.g, g, side="right"), 1, len(cmap.g) - 1)
        t = (g - cmap.g[i - 1]) / (cmap.g[i] - cmap.g[i - 1])
        off = cmap.off[i - 1] + t * (cmap.off[i] - cmap.off[i - 1])
        bound = np.maximum(cmap.hw[i - 1], cmap.hw[i]) + np.abs(cmap.off[i] - cmap.off[i - 1])
        before, after = g < cmap.g[0], g > cmap.g[-1]
        host = np.where(before, g + cmap.off[0], np.where(after, g + cmap.off[-1], g + off))
        return host, np.where(before | after, np.inf, bound)
    return np.asarray(guest_to_host(g, cmap.clock), dtype=np.float64), np.full(g.shape, cmap.line_bound)


def interval_union(a, b) -> tuple:
    """The union of the intervals [a, b) (numpy arrays of one vCPU's rows) as sorted disjoint
    (starts, ends), with the cumulative cycles before each start. Sorted by start, a row opens a
    new interval where it starts after every end before it (rows that touch merge); empty rows
    add nothing."""
    keep = b > a
    a, b = a[keep], b[keep]
    if not len(a):
        empty = np.array([], dtype=np.float64)
        return empty, empty, empty
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    first = np.flatnonzero(np.concatenate(([True], a[1:] > np.maximum.accumulate(b)[:-1])))
    s, e = a[first], np.maximum.reduceat(b, first)
    return s, e, np.concatenate(([0.0], np.cumsum(e - s)[:-1]))


_split = {"of": None, "rows": {}}  # the last timeline split by repetition (a reference to it, and its parts)


def repetition_rows(timeline, phase: str, rep: int):
    """The timeline's rows of one repetition. The timeline is split once, in one pass, and the parts
    kept while it is the last timeline asked for: every snapshot of a run asks (comparing the
    phase column's strings row by row for each was most of the summary's time at 64 vCPUs)."""
    if _split["of"] is not timeline:
        _split["of"], _split["rows"] = None, {}
        _split["rows"] = {(p, int(r)): g for (p, r), g in timeline.groupby(["phase", "rep"], sort=False)}
        _split["of"] = timeline
    got = _split["rows"].get((phase, rep))
    return got if got is not None else timeline.iloc[0:0]


def off_index(timeline, phase: str | None = None, rep: int | None = None) -> dict:
    """Per vCPU: the union of its off intervals as sorted disjoint (starts, ends), the cumulative
    off cycles before each start, the span the timeline covers, and the same union with the
    'unknown' intervals added (the most the vCPU may have been off)."""
    df = timeline if phase is None else repetition_rows(timeline, phase, rep)
    if df.empty:
        return {}
    vcpu = df["vcpu"].to_numpy(dtype=np.int64)
    a = df["start_host_tsc"].to_numpy(dtype=np.float64)
    b = df["end_host_tsc"].to_numpy(dtype=np.float64)
    off = df["state"].isin(OFF_STATES).to_numpy()
    maybe = off | (df["state"] == UNKNOWN_STATE).to_numpy()
    order = np.argsort(vcpu, kind="stable")  # each vCPU's rows together, in the timeline's order
    cut = np.flatnonzero(np.diff(vcpu[order])) + 1
    index = {}
    for rows in np.split(order, cut):
        ra, rb, ro, rm = a[rows], b[rows], off[rows], maybe[rows]
        s, e, before = interval_union(ra[ro], rb[ro])
        index[int(vcpu[rows[0]])] = (s, e, before, float(ra.min()), float(rb.max()), interval_union(ra[rm], rb[rm]))
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


def class_of(holder: str, waiter: str) -> str:
    """The wait's class from its two sides ('off', 'on', 'uncertain', 'unknown')."""
    if "unknown" in (holder, waiter):
        return L.kUnknown
    if "uncertain" in (holder, waiter):
        return UNCERTAIN
    return {("off", "off"): L.kBoth, ("off", "on"): L.kHolderPreempted,
            ("on", "off"): L.kWaiterPreempted, ("on", "on"): L.kNeither}[(holder, waiter)]


def holders_of(wait: dict) -> list | None:
    """The holders in order (consecutive repeats merged): from "holds" when the runner placed the
    hand-overs, else [start] or [start, end] when the holder changed; None if unknown."""
    if wait.get("holds"):
        out = []
        for cpu, _ in wait["holds"]:
            if not out or out[-1] != cpu:
                out.append(cpu)
        return out
    h0, h1 = wait.get("holder_cpu"), wait.get("holder_end_cpu")
    if h0 is None and h1 is None:
        return None
    if h0 is None or h1 is None or h0 == h1:
        return [h0 if h0 is not None else h1]
    return [h0, h1]


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


def measure(wait: dict, index: dict, cmap: ClockMap) -> dict:
    """Host-timeline measurement of one wait: the off-cycle ranges of each side and the side each
    range gives, by the THRESHOLDS and by the guest's any-off-time rule (*_any). A side the
    timeline does not cover has range None and side 'unknown'."""
    w = float(wait["wait_cycles"])
    a, bound = cmap.map(wait["start_tsc"])
    out = {"host_start": a, "bound_cycles": bound if np.isfinite(bound) else None, "holder_off_cycles": None,
           "waiter_off_cycles": None, "holders": holders_of(wait)}
    h = wr = None
    if np.isfinite(bound):
        pieces = holder_pieces(wait)
        if pieces is not None:
            h = pieces_off_range(index, [(f, l, a + lo, a + hi) for f, l, lo, hi in pieces], bound, w)
        wr = off_range(index, wait["cpu"], a, a + w, bound)
    out["holder_off_cycles"] = None if h is None else list(h)
    out["waiter_off_cycles"] = None if wr is None else list(wr)
    for name, rng, th in (("holder", h, HOLDER_OFF_MIN), ("waiter", wr, WAITER_OFF_MIN)):
        out[f"timeline_{name}"] = "unknown" if rng is None else _side(rng, w, th)
        out[f"timeline_{name}_any"] = "unknown" if rng is None else _any_side(rng)
    out["timeline_lhp"] = class_of(out["timeline_holder"], out["timeline_waiter"])
    return out


def steal_sides(lhp_class: str) -> tuple[bool | None, bool | None]:
    """What the guest's steal-time class says of (holder, waiter): True 'lost time during the
    wait', False 'no steal seen' (which is not 'on'), None when the class is unknown."""
    if lhp_class == L.kUnknown:
        return None, None
    return lhp_class in HOLDER_OFF, lhp_class in WAITER_OFF


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
        out[f"{name}_side"], out[f"{name}_source"], out[f"{name}_disagrees"] = side, source, disagree
    out["lhp"] = class_of(out["holder_side"], out["waiter_side"])
    out["source"] = out["holder_source"]  # the share is about the holder
    return out


def classify(wait: dict, index: dict | None, clock: dict | None) -> tuple[str, str]:
    """(lhp class, the holder side's source: 'timeline', 'steal' or 'none') of one long wait."""
    m = measure(wait, index, ClockMap(clock)) if index is not None and clock is not None else None
    r = attribute(wait, m)
    return r["lhp"], r["holder_source"]


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
    out[{"off": "holder_off", "on": "holder_on"}.get(r["holder_side"], r["holder_side"])] += 1
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
        for key, t in (("guest_vs_timeline", m["timeline_lhp"]), ("guest_vs_timeline_any_overlap", any_cls)):
            row = out["agreement"][key].setdefault(w["lhp_class"], {})
            row[t] = row.get(t, 0) + 1


def ended_inside(w: dict, snap) -> bool:
    """Whether the wait ended inside the repetition (its start to end snapshot, guest TSC), where
    the counters took it. The trace session that lists the waits runs a little longer (it stops
    after the end snapshot; under nested KVM, seconds longer), so the list can hold waits the
    counters never saw; True when the repetition's TSC span is not known."""
    a, b = getattr(snap, "start_guest_tsc", None), getattr(snap, "end_guest_tsc", None)
    return a is None or b is None or a <= w["start_tsc"] + w["wait_cycles"] <= b
