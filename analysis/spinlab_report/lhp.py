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

A wait's row carries three classes, because the same class means different things by source
('holder-preempted' from steal time: the holder lost any time; from the timeline: it was off for
at least half the wait); the API's waits (api.WAIT_COLUMNS) use the same names:
- lhp_class: the guest's, from steal time (the results' long_waits[].lhp_class, as written);
- timeline_class: the host timeline's alone (where the timeline was measured);
- cause: the class the report counts, each side from the source that decided it
  (holder_source, waiter_source).
Beside them the lock's own class is lock_class (the results' long_waits[].lock_class).

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

- a vCPU thread asleep (preemptor 'blocked') was either its guest halted or the thread blocked
  inside the hypervisor while its guest had work. Where the guest records its halts (halts.csv,
  halt_index), the halted time counts as neither off nor on: a waiter that halted for its kick
  (lock=pvqspin) or a vCPU idle is not preempted. Each halt's edges are placed with the clock's
  bound, and a record lost or refused may have been halted anywhere in it, so the least off
  cycles leave out every time possibly halted and the most only the time surely halted. Without
  a record (a Linux guest, older results) a halt counts as blocked, as before.

A side whose vCPU(s) the timeline does not cover over [a-e, b+e), whose holder is not known, or
that the clock cannot place (outside the sampled span) is not covered by the timeline. Guest CPU
n is vCPU n in the timeline (the runner checks this against QEMU's APIC ids). Each wait is
measured once; the agreement tables (guest class against the timeline's class, by the
thresholds and by the guest's any-off-time rule) use the same ranges.

This module holds the rules whole: what they share (the clock mapping, the vCPUs' off
intervals, a wait's holders, the classes and thresholds, the holder rules of a guest that
records none) and their computation over arrays (classify: per vCPU, a binary search in the
sorted union of its off intervals, with the cumulative off cycles before each, gives the off
cycles before any time, so each side of each wait costs two searches; a holder that changed at
an unknown moment, gap_off_range, is measured wait by wait, the rest over all waits at once).
attribution.py applies them once per run and lhp_share.py counts the result. Their per-wait
definition is a test's reference (tests/lhp_reference.py), which nothing in the package calls;
tests/test_rules_reference.py checks on random waits that classify gives exactly its numbers.
"""
import numpy as np

from .contract import HALT_KIND, OFF_STATES, UNKNOWN_STATE, K
from .names import LHP_CLASS as L
from .waits import LongWaits

HOLDER_OFF = (L.kHolderPreempted, L.kBoth)  # the guest's classes in which the holder lost time
WAITER_OFF = (L.kWaiterPreempted, L.kBoth)
UNCERTAIN = "uncertain"  # the analysis' own class: a side straddles its threshold (never the guest's)
# The analysis' classes for what the host timeline can tell apart and the guest cannot:
# - the holder's vCPU thread was off for at least HOLDER_OFF_MIN of the wait, but counting only
#   the time it was preempted (switched out runnable) or frozen it was not: it blocked by itself
#   (slept; under TCG inside QEMU, e.g. waiting for its global lock), so no host task took its CPU
#   (and the waiter ran: a preempted waiter with such a holder is waiter-preempted);
HOLDER_BLOCKED = "holder_blocked"
# - the holder is not known, only that it is one of the other vCPUs (a Linux guest at more than 2
#   vCPUs), and one of them was preempted for at least HOLDER_OFF_MIN of the wait: a bound (a
#   preempted waiter queued ahead looks the same). Where every other vCPU ran, the holder ran.
POSSIBLY_PREEMPTED = "possibly_preempted"
# Every class a measured wait may have: the guest's (the ABI's, in its order) and the analysis' own.
CLASSES = L.names + (UNCERTAIN, HOLDER_BLOCKED, POSSIBLY_PREEMPTED)
SOURCES = ("timeline", "steal", "none")
# A side counts as off-CPU for the wait when it was off for at least this share of the wait.
HOLDER_OFF_MIN = 0.5
WAITER_OFF_MIN = 0.5
THRESHOLDS = {"holder_off_min_fraction": HOLDER_OFF_MIN, "waiter_off_min_fraction": WAITER_OFF_MIN}
# Holder-off fraction histogram (summary.json, report): fraction bins and wait-length octaves.
FRACTION_EDGES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0000001)
# A side's codes (UNCERTAIN_SIDE: the side straddles its threshold; UNCERTAIN is the class). The holder's side may also be BLOCKED (off for the threshold only counting the
# time its thread blocked by itself: HOLDER_BLOCKED) or POSSIBLY_OFF (its holder is one of
# several vCPUs and one of them was off: POSSIBLY_PREEMPTED); the waiter's is one of the first four.
SIDES = ("off", "on", "uncertain", "unknown", "blocked", "possibly_off")
OFF, ON, UNCERTAIN_SIDE, UNKNOWN, BLOCKED, POSSIBLY_OFF = range(6)
NO_SOURCE = 2  # SOURCES[2] == "none"


class ClockMap:
    """guest TSC -> (host TSC, bound) from clock.json.

    With 'points' ([guest_tsc, host - guest, half bracket] per kept sample): between two points
    the offset lay within the union of their ranges offset +- half width (it moves one way only),
    so a time there maps with that range's middle, bound half its span (collector/clock_sync.h,
    which says why one way only); no mapping outside.
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
        lo = np.minimum(cmap.off[i - 1] - cmap.hw[i - 1], cmap.off[i] - cmap.hw[i])
        hi = np.maximum(cmap.off[i - 1] + cmap.hw[i - 1], cmap.off[i] + cmap.hw[i])
        off, bound = (lo + hi) / 2, (hi - lo) / 2
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


def repetitions(timeline) -> dict:
    """(phase, rep) -> the timeline's rows of that repetition, split in one pass (comparing the phase
    column's strings row by row for each snapshot was most of the summary's time at 64 vCPUs)."""
    return {(p, int(r)): g for (p, r), g in timeline.groupby(["phase", "rep"], sort=False)}


def repetition_rows(timeline, phase: str, rep: int):
    """The timeline's rows of one repetition (a tool's or a test's; attribution.py splits the
    timeline once, repetitions())."""
    return timeline[(timeline["phase"] == phase) & (timeline["rep"] == rep)]


BLOCKED_PREEMPTOR = "blocked"  # timeline.csv's preemptor of an off row whose thread slept (preemptors.py)


def has_blocked_rows(timeline, phase: str | None = None, rep: int | None = None) -> bool:
    """Whether the timeline (of one repetition) has off rows whose vCPU thread blocked by itself."""
    df = timeline if phase is None else repetition_rows(timeline, phase, rep)
    return "preemptor" in df.columns and bool((df["preemptor"] == BLOCKED_PREEMPTOR).any())


def off_index(timeline, phase: str | None = None, rep: int | None = None, blocked: bool = True,
              halts: dict | None = None) -> dict:
    """Per vCPU: the union of its off intervals as sorted disjoint (starts, ends), the cumulative
    off cycles before each start, the span the timeline covers, and the same union with the
    'unknown' intervals added (the most the vCPU may have been off). blocked=False leaves out the
    off rows whose thread blocked by itself (preemptor 'blocked'): what was preempted or frozen.
    halts (halt_index): the time its guest had halted is taken out, so that it counts as neither
    off nor on: the least union without any time it may have been halted, the most without the
    time it surely was."""
    df = timeline if phase is None else repetition_rows(timeline, phase, rep)
    if df.empty:
        return {}
    vcpu = df["vcpu"].to_numpy(dtype=np.int64)
    a = df["start_host_tsc"].to_numpy(dtype=np.float64)
    b = df["end_host_tsc"].to_numpy(dtype=np.float64)
    off = df["state"].isin(OFF_STATES).to_numpy()
    if not blocked and "preemptor" in df.columns:
        off &= (df["preemptor"] != BLOCKED_PREEMPTOR).to_numpy()
    maybe = off | (df["state"] == UNKNOWN_STATE).to_numpy()
    order = np.argsort(vcpu, kind="stable")  # each vCPU's rows together, in the timeline's order
    cut = np.flatnonzero(np.diff(vcpu[order])) + 1
    index = {}
    for rows in np.split(order, cut):
        ra, rb, ro, rm = a[rows], b[rows], off[rows], maybe[rows]
        v = int(vcpu[rows[0]])
        least, most = interval_union(ra[ro], rb[ro]), interval_union(ra[rm], rb[rm])
        if halts is not None and v in halts:
            surely, possibly = halts[v]
            least = _with_before(*interval_minus(least[0], least[1], *possibly))
            most = _with_before(*interval_minus(most[0], most[1], *surely))
        index[v] = (*least, float(ra.min()), float(rb.max()), most)
    return index


# The guest's halts (halts.csv, reader.read_halts) -----------------------------------------------
# A vCPU thread asleep is either its guest halted (idle, or a pvqspin waiter waiting for its kick)
# or the thread blocked by itself while its guest had work (under TCG inside QEMU). The guest
# records each halt's span in guest TSC (perfdata.h HaltLog; collector/halt_log.h drains it), so
# the time inside a halt counts as neither off nor on: the guest did not want its vCPU then.
# Mapped onto the host with the clock, a span [g0, g1) was surely halted over [h0 + e0, h1 - e1)
# and possibly over [h0 - e0, h1 + e1); a lost or refused record, possibly over the whole range.

def halt_index(halts, cmap) -> dict:
    """Per vCPU (guest CPU n is vCPU n): (surely, possibly) halted host intervals, each sorted
    disjoint (starts, ends). A time the clock cannot place leaves 'surely' empty and widens
    'possibly' up to the clock's nearest point (beyond it, without bound)."""
    out = {}
    if halts is None or halts.empty:
        return out
    cpu = halts[K.cpu].to_numpy(dtype=np.int64)
    g0 = halts[K.enter_tsc].to_numpy(dtype=np.float64)
    g1 = halts[K.exit_tsc].to_numpy(dtype=np.float64)
    halted = (halts[K.kind] == HALT_KIND.kHalted).to_numpy()
    h0, e0 = host_map(cmap, g0)
    open_ = ~np.isfinite(g1)
    h1, e1 = host_map(cmap, np.where(open_, g0, g1))
    h1, e1 = np.where(open_, np.inf, h1), np.where(open_, 0.0, e1)
    # Outside the clock's points a time has no bound, but it is still ordered against them (the
    # guest's TSC and the host's clock both go forward): before the first point it was before that
    # point's latest host time, after the last after that point's earliest. So a halt at boot,
    # before any point, is possibly halted only up to the first point, not over the whole run.
    before_first = after_last = None
    if len(cmap.g) >= 2:
        before_first = cmap.g[0] + cmap.off[0] + cmap.hw[0]
        after_last = cmap.g[-1] + cmap.off[-1] - cmap.hw[-1]
    with np.errstate(invalid="ignore"):
        s_lo = np.where(np.isfinite(e0), h0 + e0, np.inf)
        s_hi = np.where(np.isfinite(e1), h1 - e1, -np.inf)
        p_lo = np.where(np.isfinite(e0), h0 - e0, -np.inf)
        p_hi = np.where(np.isfinite(e1), h1 + e1, np.inf)
    if before_first is not None:
        p_lo = np.where(~np.isfinite(e0) & (g0 > cmap.g[-1]), after_last, p_lo)
        p_hi = np.where(~np.isfinite(e1) & ~open_ & (g1 < cmap.g[0]), before_first, p_hi)
    for v in np.unique(cpu).tolist():
        m = cpu == v
        sm = m & halted
        out[int(v)] = (interval_union(s_lo[sm], s_hi[sm])[:2], interval_union(p_lo[m], p_hi[m])[:2])
    return out


def interval_minus(s, e, cs, ce) -> tuple:
    """The sorted disjoint intervals (s, e) without the sorted disjoint (cs, ce): (starts, ends)."""
    if not len(s) or not len(cs):
        return s, e
    lo, hi = s[0], e[-1]
    i, j = np.searchsorted(ce, lo, side="right"), np.searchsorted(cs, hi, side="left")
    cs, ce = np.clip(cs[i:j], lo, hi), np.clip(ce[i:j], lo, hi)  # only what overlaps, finite
    if not len(cs):
        return s, e
    pts = np.unique(np.concatenate((s, e, cs, ce)))
    mid = (pts[:-1] + pts[1:]) / 2
    inside = lambda a, b: (lambda k: (k >= 0) & (mid < b[np.maximum(k, 0)]))(np.searchsorted(a, mid, side="right") - 1)
    keep = inside(s, e) & ~inside(cs, ce)
    starts = np.flatnonzero(keep & ~np.concatenate(([False], keep[:-1])))
    ends = np.flatnonzero(keep & ~np.concatenate((keep[1:], [False])))
    return pts[starts], pts[ends + 1]


def _with_before(s, e) -> tuple:
    """(starts, ends, the cumulative cycles before each start) of sorted disjoint intervals."""
    return s, e, np.concatenate(([0.0], np.cumsum(e - s)[:-1])) if len(s) else np.array([], dtype=np.float64)


def class_of(holder: str, waiter: str) -> str:
    """The wait's class from its two sides ('off', 'on', 'uncertain', 'unknown'; the holder's also
    'blocked': off only while blocked, and 'possibly_off': some possible holder was off)."""
    if "unknown" in (holder, waiter):
        return L.kUnknown
    if "uncertain" in (holder, waiter):
        return UNCERTAIN
    if holder == "blocked":  # the holder was not preempted: the waiter's own preemption, if any, is the cause
        return L.kWaiterPreempted if waiter == "off" else HOLDER_BLOCKED
    if holder == "possibly_off":
        return POSSIBLY_PREEMPTED
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


# A Linux guest's waits carry no holder: its spinlocks do not record one (the agent probes the
# slow path, kTraceSpinWaitOnly). A spinlock holder runs with preemption off, so it is on a CPU,
# and not on the waiter's. What a rule can say from that, per vCPU count:
HOLDER_RULE_OTHER_VCPU = "other-vcpu"   # 2 vCPUs: the holder is the other one (exact)
HOLDER_RULE_ANY_OTHER = "any-other-vcpu"  # N > 2: one of the other N - 1 (holder ran / possibly preempted)
HOLDER_RULE_TEXT = {
    HOLDER_RULE_OTHER_VCPU: "the holder is the other vCPU (a Linux guest at 2 vCPUs: a spinlock holder "
                            "runs with preemption off, so it is on a CPU, and not on the waiter's; exact, "
                            "but which of its holds covered the wait is not known)",
    HOLDER_RULE_ANY_OTHER: "the holder is one of the other vCPUs (a Linux guest at more than 2 vCPUs: a "
                           "spinlock holder runs with preemption off, so it is on a CPU); where every other "
                           "vCPU ran for at least half the wait, the holder ran (exact); where one was "
                           "preempted for half of it, the wait is 'possibly preempted', a bound: a preempted "
                           "waiter queued ahead looks the same",
}


def holder_rule(meta) -> str | None:
    """The rule that names the holders of a run's waits where the guest records none (meta: the
    run's reader.Meta): a Linux guest (meta.json "guest"), at 2 vCPUs the other vCPU, at more any
    other; None otherwise."""
    if meta.guest != "linux" or not isinstance(meta.vcpus, int):
        return None
    return HOLDER_RULE_OTHER_VCPU if meta.vcpus == 2 else HOLDER_RULE_ANY_OTHER if meta.vcpus > 2 else None


def apply_holder_rule(lw, rule: str | None, vcpus: int | None = None) -> None:
    """Marks, in place, every wait of lw (waits.LongWaits) that has no holder as named by rule
    (lw.holder_by_rule), and at 2 vCPUs names it: the other vCPU (the end holder stays unknown:
    the hand-over is not seen). At N > 2 (lw.rule_cpus = N) the measurement tries every other vCPU
    (classify)."""
    if rule not in HOLDER_RULE_TEXT or not len(lw):
        return
    none = (lw.holder < 0) & (lw.holder_end < 0) & (lw.holds_at[1:] == lw.holds_at[:-1])
    lw.holder_by_rule = lw.holder_by_rule | none
    if rule == HOLDER_RULE_OTHER_VCPU:
        lw.holder = np.where(none, 1 - lw.cpu, lw.holder)
    else:
        lw.rule_cpus = int(vcpus)


def steal_sides(lhp_class: str) -> tuple[bool | None, bool | None]:
    """What the guest's steal-time class says of (holder, waiter): True 'lost time during the
    wait', False 'no steal seen' (which is not 'on'), None when the class is unknown."""
    if lhp_class == L.kUnknown:
        return None, None
    return lhp_class in HOLDER_OFF, lhp_class in WAITER_OFF


# Measurement and attribution over arrays ------------------------------------------------------

def _until(entry, t):
    """Off cycles of a union (starts, ends, cumulative before each start) before each time in t:
    computed for every time at once."""
    s, e, before = entry[0], entry[1], entry[2]
    if not len(s):
        return np.zeros(t.shape)
    i = np.searchsorted(s, t, side="right") - 1
    j = np.maximum(i, 0)
    return np.where(i < 0, 0.0, before[j] + np.minimum(t, e[j]) - s[j])


def _ranges(index: dict, vcpu, lo, hi, e):
    """Per piece ([lo, hi) on vcpu, the clock's bound e): (covered, least, most) off cycles as
    the holder's and the waiter's ranges count one piece held by one vCPU: covered over [lo-e, hi+e), the least
    over [lo+e, hi-e) with unknown time on, the most over [lo-e, hi+e) with it off."""
    covered = np.zeros(vcpu.shape, dtype=bool)
    least, most = np.zeros(vcpu.shape), np.zeros(vcpu.shape)
    for v in np.unique(vcpu).tolist():
        if v not in index:
            continue
        m = np.flatnonzero(vcpu == v)
        entry = index[v]
        l, h, b = lo[m], hi[m], e[m]
        covered[m] = ~(l - b < entry[3]) & ~(h + b > entry[4])
        a1, b1 = l + b, h - b
        least[m] = np.where(b1 <= a1, 0.0, _until(entry, b1) - _until(entry, a1))
        a2, b2 = l - b, h + b
        most[m] = np.where(b2 <= a2, 0.0, _until(entry[5], b2) - _until(entry[5], a2))
    return covered, least, most


def _sides(lo, hi, wait, threshold: float):
    """Each side by its threshold (off when at least threshold x wait surely off, on when surely
    below it, else uncertain) and by the guest's any-off-time rule (off if surely off at all, on
    if surely never); a NaN range: the side is unknown."""
    known = ~np.isnan(lo)
    side = np.where(lo >= threshold * wait, OFF, np.where(hi < threshold * wait, ON, UNCERTAIN_SIDE))
    anys = np.where(lo > 0, OFF, np.where(hi == 0, ON, UNCERTAIN_SIDE))
    return np.where(known, side, UNKNOWN).astype(np.int8), np.where(known, anys, UNKNOWN).astype(np.int8)


class Attributed:
    """The long waits (>= threshold) of one snapshot, measured and attributed (classify),
    as columns; pos: their positions in the snapshot's LongWaits. NaN in the
    float columns where the per-wait rules give None; sides as codes into SIDES, sources into SOURCES."""

    def __init__(self, lw: LongWaits, pos, rep: int, measured: bool):
        self.lw, self.pos, self.rep, self.measured = lw, pos, rep, measured
        n = pos.size
        nan = lambda: np.full(n, np.nan)
        self.host_start, self.bound, self.h_lo, self.h_hi, self.w_lo, self.w_hi = (nan() for _ in range(6))
        # the same ranges counting only the time each vCPU was preempted or frozen (not blocked)
        self.hp_lo, self.hp_hi, self.wp_lo, self.wp_hi = (nan() for _ in range(4))
        # where the guest records its halts (halts_recorded), the ranges above leave the halted
        # time out; these count it in (all the time the vCPU was off), for the halted share
        self.halts_recorded = False
        self.ha_lo, self.ha_hi, self.wa_lo, self.wa_hi = (nan() for _ in range(4))
        self.t = {k: np.full(n, UNKNOWN, dtype=np.int8) for k in ("holder", "holder_any", "waiter", "waiter_any")}
        self.side, self.source, self.disagrees = {}, {}, {}
        self.in_repetition = np.ones(n, dtype=bool)
        # measured: the guest's holder's pieces placed on the host (holder_pieces: wait k, vCPU,
        # host lo, host hi), which preemptors.py shares out; a hand-over at an unknown moment has none
        self.holder_pieces = None
        self.steal = None  # (holder, waiter): what the guest's steal time says of each side (steal_codes)

    def __len__(self) -> int:
        return int(self.pos.size)

    # columns of the listed waits, for the selected ones
    def wait_cycles(self):
        return self.lw.wait[self.pos]

    def start_tsc(self):
        return self.lw.start[self.pos]

    def cpu(self):
        return self.lw.cpu[self.pos]

    def holder_cpu(self):
        return self.lw.holder[self.pos]

    def holder_end_cpu(self):
        return self.lw.holder_end[self.pos]

    def cause(self) -> np.ndarray:
        """The class the report counts of each wait (names: class_of of its two sides)."""
        return CLASS_NAMES[self.side["holder"] * 4 + self.side["waiter"]]

    def timeline_class(self) -> np.ndarray:
        """The host timeline's class alone of each wait (as row's timeline_class), None where the
        timeline was not measured (no timeline or no clock)."""
        if not self.measured:
            return np.full(len(self), None, dtype=object)
        return CLASS_NAMES[self.t["holder"] * 4 + self.t["waiter"]]

    def has_holds(self):
        return self.lw.holds_at[self.pos + 1] > self.lw.holds_at[self.pos]

    def row(self, k: int) -> dict:
        """Wait k as long_waits_share lists it."""
        w = self.lw[int(self.pos[k])]
        opt = lambda x: None if np.isnan(x) else float(x)
        rng = lambda lo, hi: None if np.isnan(lo) else [float(lo), float(hi)]
        base = {"host_start": opt(self.host_start[k]), "bound_cycles": opt(self.bound[k]),
                "holder_off_cycles": rng(self.h_lo[k], self.h_hi[k]),
                "waiter_off_cycles": rng(self.w_lo[k], self.w_hi[k]), "holders": holders_of(w)}
        if self.measured:
            for name in ("holder", "waiter"):
                base[f"timeline_{name}"] = SIDES[self.t[name][k]]
                base[f"timeline_{name}_any"] = SIDES[self.t[name + "_any"][k]]
            base["timeline_class"] = str(CLASS_NAMES[self.t["holder"][k] * 4 + self.t["waiter"][k]])
        r = {}
        for name in ("holder", "waiter"):
            r[f"{name}_side"] = SIDES[self.side[name][k]]
            r[f"{name}_source"] = SOURCES[self.source[name][k]]
            r[f"{name}_disagrees"] = bool(self.disagrees[name][k])
        r["cause"] = str(CLASS_NAMES[self.side["holder"][k] * 4 + self.side["waiter"][k]])
        return {**w, "rep": self.rep, **base, **r, "in_repetition": bool(self.in_repetition[k])}


def _class_names():
    """Indexed by holder side * 4 + waiter side (the waiter's side is one of the first four)."""
    return np.array([class_of(SIDES[h], SIDES[w]) for h in range(len(SIDES)) for w in range(4)], dtype=object)


CLASS_NAMES = _class_names()


def steal_codes(lw: LongWaits, pos):
    """steal_sides per wait: (holder, waiter) as -1 unknown, 0 no steal seen, 1 lost time."""
    table = np.array([[-1 if x is None else int(x) for x in steal_sides(n)] for n in lw.lhp_names] or
                     np.zeros((0, 2)), dtype=np.int8).reshape(-1, 2)
    codes = lw.lhp_code[pos]
    return table[codes, 0], table[codes, 1]


def chain_pieces(lw: LongWaits, i: int, a: float) -> list | None:
    """Wait i's holders as pieces (first, last, lo, hi), lo and hi in host TSC (the wait begins at
    host time a): [lo, hi) held by `first`, or by `first` and then from an unknown moment by
    `last`. From its "holds" ([cpu, from_tsc] in order, the first holding when the wait began;
    an unplaced hand-over is one gap up to the next placed one), else from the guest's holders
    at start and end (one gap over the whole wait when they differ); None when no holder is known."""
    w = float(int(lw.wait[i]))
    s, t = int(lw.holds_at[i]), int(lw.holds_at[i + 1])
    if s == t:
        h0, h1 = int(lw.holder[i]), int(lw.holder_end[i])
        if h0 < 0 and h1 < 0:
            return None
        first = h0 if h0 >= 0 else h1
        return [(first, h1 if h1 >= 0 and h0 >= 0 else first, a + 0.0, a + w)]
    start = float(int(lw.start[i]))
    cpus, frms = lw.holds_cpu[s:t].tolist(), lw.holds_from[s:t].tolist()
    pieces, lo, first, last = [], 0.0, cpus[0], cpus[0]
    for cpu, frm in zip(cpus[1:], frms[1:]):
        if frm < 0:
            last = cpu  # at an unknown moment, up to the next placed hand-over
            continue
        t_ = min(max(float(frm) - start, lo), w)
        pieces.append((first, last, lo, t_))
        lo, first, last = t_, cpu, cpu
    pieces.append((first, last, lo, w))
    return [(f, l, a + x, a + y) for f, l, x, y in ([p for p in pieces if p[3] > p[2]] or pieces[-1:])]


def _covered(index: dict, v: int, a: float, b: float) -> bool:
    """Whether the timeline covers vCPU v over [a, b)."""
    entry = index.get(v)
    return entry is not None and not a < entry[3] and not b > entry[4]


def _extreme(index: dict, first: int, last: int, lo: float, hi: float, most: bool) -> float:
    """Off cycles of [lo, hi) held by `first` and then, from a moment s, by `last`: the least
    (unknown timeline time on) or the most (unknown time off) over every s in [lo, hi]. The sum
    off_first(lo, s) + off_last(s, hi) is piecewise linear in s: its extremes lie at the edges of
    either vCPU's intervals, so those are the moments tried."""
    if hi <= lo:
        return 0.0
    pick = (lambda e: e[5]) if most else (lambda e: e)
    ef, el = pick(index[first]), pick(index[last])
    if first == last:
        return float(_until(ef, np.array([hi]))[0] - _until(ef, np.array([lo]))[0])
    pts = [lo, hi]
    for v in (first, last):
        for s, e in ((index[v][0], index[v][1]), (index[v][5][0], index[v][5][1])):
            i0, i1 = np.searchsorted(e, lo), np.searchsorted(s, hi)
            pts += [x for x in np.concatenate((s[i0:i1], e[i0:i1])).tolist() if lo < x < hi]
    t = np.array(pts, dtype=np.float64)
    both = (_until(ef, t) - _until(ef, np.full(t.shape, lo))) + (_until(el, np.full(t.shape, hi)) - _until(el, t))
    return float(both.max() if most else both.min())


def gap_off_range(index: dict, pieces: list, e: float, wait: float) -> tuple[float, float] | None:
    """(least, most) off cycles of the holder of one wait of `wait` cycles whose pieces (first,
    last, lo, hi; host TSC) include a hand-over at an unknown moment. The whole wait may lie
    anywhere within +-e (each hand-over moves with it): the least counts each piece shrunk by e
    at both ends, the most widened by e. None when a holder's vCPU is not covered."""
    for first, last, lo, hi in pieces:
        if not _covered(index, first, lo - e, hi + e) or not _covered(index, last, lo - e, hi + e):
            return None
    least = sum(_extreme(index, f, l, lo + e, hi - e, False) for f, l, lo, hi in pieces)
    most = sum(_extreme(index, f, l, lo - e, hi + e, True) for f, l, lo, hi in pieces)
    return least, min(most, wait)


def holder_pieces(lw: LongWaits, pos, a, e, wait, finite, holder=None):
    """The holder's pieces of the measurable waits (finite bound, holder known), flattened:
    (wait k, vCPU, host lo, host hi), and the waits whose holder changed at an unknown moment
    ({k: (their pieces, None)}, measured by gap_off_range). holder: the one holder of each wait
    instead of the guest's (-1: none; a rule's candidate), for waits without hand-overs."""
    h0, h1 = lw.holder[pos], lw.holder_end[pos]
    holds = lw.holds_at[pos + 1] > lw.holds_at[pos]
    if holder is not None:
        h0, h1, holds = holder, np.full(holder.shape, -1, dtype=np.int64), np.zeros(holder.shape, dtype=bool)
    simple = finite & ~holds & ((h0 < 0) | (h1 < 0) | (h0 == h1)) & ((h0 >= 0) | (h1 >= 0))
    k = np.flatnonzero(simple)
    pk, pv, plo, phi = [k], [np.where(h0[k] >= 0, h0[k], h1[k])], [a[k] + 0.0], [a[k] + wait[k]]
    slow = {}
    for j in np.flatnonzero(finite & ~simple).tolist():
        placed = chain_pieces(lw, int(pos[j]), float(a[j]))
        if placed is None:
            continue
        if all(f == l for f, l, _, _ in placed):
            pk.append(np.full(len(placed), j))
            pv.append(np.array([f for f, _, _, _ in placed], dtype=np.int64))
            plo.append(np.array([x for _, _, x, _ in placed], dtype=np.float64))
            phi.append(np.array([x for _, _, _, x in placed], dtype=np.float64))
        else:
            slow[j] = (placed, None)
    cat = lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, t)
    return cat(pk, np.int64), cat(pv, np.int64), cat(plo, np.float64), cat(phi, np.float64), slow


def _sum_pieces(n: int, k, covered, least, most, cap):
    """Per wait: (least, most) summed over its pieces in order (as the per-wait reference's sum()), most capped at
    cap; NaN where a piece is not covered or the wait has no piece."""
    lo, hi = np.zeros(n), np.zeros(n)
    np.add.at(lo, k, least)
    np.add.at(hi, k, most)
    ok = np.zeros(n, dtype=bool)
    ok[k] = True
    bad = np.zeros(n, dtype=bool)
    bad[k[~covered]] = True
    ok &= ~bad
    return np.where(ok, lo, np.nan), np.where(ok, np.minimum(hi, cap), np.nan)


def _holder_range(lw: LongWaits, pos, a, e, wait, finite, index: dict, any_other, pieces):
    """(least, most) off cycles of each wait's holder against index (NaN: not measurable), from its
    pieces (holder_pieces). For the any_other waits (a rule's: the holder is one of the other
    lw.rule_cpus - 1 vCPUs), the most off of them, tried one by one: NaN where any of them is not
    covered."""
    n = pos.size
    h_lo, h_hi = _pieces_range(index, pieces, e, wait)
    if np.any(any_other):
        cpu, cpus = lw.cpu[pos], lw.rule_cpus
        m_lo, m_hi = np.full(n, -np.inf), np.full(n, -np.inf)
        for d in range(1, cpus):
            candidate = np.where(any_other, (cpu + d) % cpus, -1)
            lo, hi = _pieces_range(index, holder_pieces(lw, pos, a, e, wait, finite, candidate), e, wait)
            m_lo, m_hi = np.maximum(m_lo, lo), np.maximum(m_hi, hi)  # NaN (not covered) wins
        h_lo, h_hi = np.where(any_other, m_lo, h_lo), np.where(any_other, m_hi, h_hi)
    return h_lo, h_hi


def _pieces_range(index: dict, pieces, e, wait):
    """The holder's range from its pieces (holder_pieces); a gap of unknown moment by gap_off_range."""
    k, v, lo, hi, slow = pieces
    cov, least, most = _ranges(index, v, lo, hi, e[k])
    h_lo, h_hi = _sum_pieces(wait.size, k, cov, least, most, wait)
    for j, (placed, _) in slow.items():
        r = gap_off_range(index, placed, float(e[j]), float(wait[j]))
        h_lo[j], h_hi[j] = (np.nan, np.nan) if r is None else r
    return h_lo, h_hi


def _waiter_range(lw: LongWaits, pos, a, e, wait, finite, index: dict):
    """(least, most) off cycles of each waiter's own vCPU over the whole wait."""
    n = pos.size
    k = np.flatnonzero(finite)
    b = a[k] + wait[k]
    cov, least, most = _ranges(index, lw.cpu[pos][k], a[k], b, e[k])
    return _sum_pieces(n, k, cov, least, most, np.zeros(n) if not n else _scatter(n, k, b - a[k]))


def _holder_side(all_off, preempted, any_other):
    """The holder's side from the timeline: by all its off time (all_off), then told apart by the
    time it was preempted or frozen alone (preempted): off only while blocked is BLOCKED, off with
    preemption uncertain is UNCERTAIN_SIDE; a rule's possible holder off is POSSIBLY_OFF."""
    side = all_off.copy()
    side[(all_off == OFF) & (preempted == ON)] = BLOCKED
    side[(all_off == OFF) & (preempted == UNCERTAIN_SIDE)] = UNCERTAIN_SIDE
    side[(side == OFF) & any_other] = POSSIBLY_OFF
    return side


def classify(snap, index: dict | None, cmap, threshold: int, index_pre: dict | None = None,
             index_all: dict | None = None) -> Attributed:
    """The host-timeline measurement and the attribution of every long wait (>= threshold) of
    snap, over arrays (the rules: this module's docstring).
    index: off_index of the snapshot's repetition and cmap its ClockMap (None: no timeline
    or clock, so nothing is measured); index_pre: the same without the blocked rows
    (off_index(blocked=False); None: the timeline has none, so it is index). Where the guest
    records its halts, both leave the halted time out (off_index's halts) and index_all is the
    index with it in (None: no halts recorded)."""
    lw = LongWaits.of(snap.long_waits)
    pos = np.flatnonzero(lw.wait >= threshold)
    out = Attributed(lw, pos, snap.rep, index is not None)
    n, wait = pos.size, lw.wait[pos].astype(np.float64)
    a0, b0 = getattr(snap, "start_guest_tsc", None), getattr(snap, "end_guest_tsc", None)
    if a0 is not None and b0 is not None:
        end = lw.start[pos] + lw.wait[pos]
        out.in_repetition = (a0 <= end) & (end <= b0)
    any_other = lw.holder_by_rule[pos] & (lw.rule_cpus > 2)
    if index is not None:
        a, bound = host_map(cmap, lw.start[pos])
        finite = np.isfinite(bound)
        out.host_start, out.bound = a, np.where(finite, bound, np.nan)
        e = np.where(finite, bound, 0.0)
        pre = index if index_pre is None else index_pre
        pieces = holder_pieces(lw, pos, a, e, wait, finite)
        out.holder_pieces = pieces[:4]
        out.h_lo, out.h_hi = _holder_range(lw, pos, a, e, wait, finite, index, any_other, pieces)
        out.hp_lo, out.hp_hi = ((out.h_lo, out.h_hi) if pre is index else
                                _holder_range(lw, pos, a, e, wait, finite, pre, any_other, pieces))
        out.w_lo, out.w_hi = _waiter_range(lw, pos, a, e, wait, finite, index)
        out.wp_lo, out.wp_hi = (out.w_lo, out.w_hi) if pre is index else _waiter_range(lw, pos, a, e, wait, finite, pre)
        if index_all is not None:
            out.halts_recorded = True
            out.ha_lo, out.ha_hi = _holder_range(lw, pos, a, e, wait, finite, index_all, any_other, pieces)
            out.wa_lo, out.wa_hi = _waiter_range(lw, pos, a, e, wait, finite, index_all)
        out.t["holder"], out.t["holder_any"] = _sides(out.h_lo, out.h_hi, wait, HOLDER_OFF_MIN)
        out.t["waiter"], out.t["waiter_any"] = _sides(out.w_lo, out.w_hi, wait, WAITER_OFF_MIN)
    steal = out.steal = steal_codes(lw, pos)
    for i, name in enumerate(("holder", "waiter")):
        tl, st = out.t[name], steal[i]
        has_tl = tl != UNKNOWN
        told = tl  # the timeline's side apart from why the vCPU was off (what the steal time is compared with)
        if name == "holder" and index is not None:
            told = _holder_side(tl, _sides(out.hp_lo, out.hp_hi, wait, HOLDER_OFF_MIN)[0], any_other)
        out.side[name] = np.where(has_tl, told, np.where(st == 1, OFF, UNKNOWN)).astype(np.int8)
        out.source[name] = np.where(has_tl, 0, np.where(st == 1, 1, NO_SOURCE)).astype(np.int8)
        out.disagrees[name] = has_tl & (st >= 0) & (tl <= ON) & ((st == 1) != (tl == OFF))
    return out


def _scatter(n: int, k, values):
    out = np.zeros(n)
    out[k] = values
    return out


def classify_snapshot(snap, rows, cmap, threshold: int, halts: dict | None = None) -> Attributed:
    """classify over one snapshot. cmap: the run's ClockMap, None without a timeline or a clock
    (nothing is measured); rows: its repetition's timeline rows (None: the timeline has none);
    halts: the run's halt_index (None: the guest records no halts)."""
    index = pre = every = None
    if cmap is not None:
        index = off_index(rows, halts=halts) if rows is not None else {}
        blocked = rows is not None and has_blocked_rows(rows)
        pre = off_index(rows, blocked=False, halts=halts) if blocked else None
        every = (off_index(rows) if rows is not None else {}) if halts is not None else None
    return classify(snap, index, cmap, threshold, pre, every)


def classify_all(snaps, timeline, clock, threshold: int, halts=None) -> tuple:
    """The rules over these snapshots, the timeline split by repetition once: (its rows per
    (phase, rep), None without a timeline or a clock, when nothing is measured; the Attributed of
    each snapshot with a list of long waits, in order). halts: the run's halts.csv (None: the
    guest records none), mapped onto the host once."""
    cmap = ClockMap(clock) if timeline is not None and clock is not None else None
    parts = repetitions(timeline) if cmap is not None else None
    hidx = halt_index(halts, cmap) if cmap is not None and halts is not None else None
    return parts, [classify_snapshot(s, None if parts is None else parts.get((s.phase, s.rep)), cmap, threshold, hidx)
                   for s in snaps if s.long_waits is not None]
