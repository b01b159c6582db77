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

This module holds what the rules share (the clock mapping, the vCPUs' off intervals, a wait's
holders, the classes and thresholds); the rules themselves are computed once, over arrays, in
waits.py (classify, count, fraction_table). Their per-wait definition is a test's reference
(tests/lhp_reference.py), which nothing in the package calls.
"""
import numpy as np

from .contract import OFF_STATES, UNKNOWN_STATE
from .names import LHP_CLASS as L

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


BLOCKED_PREEMPTOR = "blocked"  # timeline.csv's preemptor of an off row whose thread slept (preemptors.py)


def has_blocked_rows(timeline, phase: str | None = None, rep: int | None = None) -> bool:
    """Whether the timeline (of one repetition) has off rows whose vCPU thread blocked by itself."""
    df = timeline if phase is None else repetition_rows(timeline, phase, rep)
    return "preemptor" in df.columns and bool((df["preemptor"] == BLOCKED_PREEMPTOR).any())


def off_index(timeline, phase: str | None = None, rep: int | None = None, blocked: bool = True) -> dict:
    """Per vCPU: the union of its off intervals as sorted disjoint (starts, ends), the cumulative
    off cycles before each start, the span the timeline covers, and the same union with the
    'unknown' intervals added (the most the vCPU may have been off). blocked=False leaves out the
    off rows whose thread blocked by itself (preemptor 'blocked'): what was preempted or frozen."""
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
        s, e, before = interval_union(ra[ro], rb[ro])
        index[int(vcpu[rows[0]])] = (s, e, before, float(ra.min()), float(rb.max()), interval_union(ra[rm], rb[rm]))
    return index


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


def holder_rule(meta: dict) -> str | None:
    """The rule that names the holders of a run's waits where the guest records none: a Linux guest
    (meta.json "guest"), at 2 vCPUs the other vCPU, at more any other; None otherwise."""
    if meta.get("guest") != "linux" or not isinstance(meta.get("vcpus"), int):
        return None
    return HOLDER_RULE_OTHER_VCPU if meta["vcpus"] == 2 else HOLDER_RULE_ANY_OTHER if meta["vcpus"] > 2 else None


def apply_holder_rule(lw, rule: str | None, vcpus: int | None = None) -> None:
    """Marks, in place, every wait of lw (waits.LongWaits) that has no holder as named by rule
    (lw.holder_by_rule), and at 2 vCPUs names it: the other vCPU (the end holder stays unknown:
    the hand-over is not seen). At N > 2 (lw.rule_cpus = N) the measurement tries every other vCPU
    (waits.classify)."""
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
