"""Each long spinlock wait of a Linux guest, classed with its source and its certainty (pure).

Inputs: the waits (records.Wait: cpu, depth, lock, start, end in the GUEST's TSC), the guest's
vCPU count, a clockfit.ClockMap (guest TSC -> host TSC with a bound) and a
timeline_input.HostTimeline (per vCPU, host TSC: when it was surely off, when surely on; the
rest not covered). A long wait is one of at least `threshold` guest TSC cycles (default 2^20,
spinlab's `long-wait`, records.LONG_WAIT_THRESHOLD).

What is known of the holder (issue 51): a Linux spinlock holder runs with preemption off, so it
is on a CPU, and never the waiter's own (the waiter spins there with preemption off too). So
the holder is always some OTHER vCPU; with 2 vCPUs it is the other one. With more, the holder
can change during one wait (the waiters queued ahead take the lock in turn), and it is not
known which vCPU held it when.

Measuring one wait, for a set of vCPUs:
- the wait [g0, g1) maps to host [h0, h1) with bounds e0, e1: its true host start A lies in
  [h0 - e0, h0 + e0] and its end B in [h1 - e1, h1 + e1];
- OFF share = |off n [A, B)| / (B - A), where `off` is the set of host times the vCPUs were off
  (for several vCPUs: ANY of them off, the union). Its range [lo, hi] is computed exactly over
  every (A, B) in those boxes: lo with uncovered time counted as on (the off set alone), hi with
  uncovered time counted as off (1 - the least share of the time ALL of them were surely on).
  The extremes of the ratio lie at box ends or at the sets' interval ends inside the boxes (on
  each piece between them the ratio is monotone in A and in B); they are found exactly, with
  fractions, by Dinkelbach's iteration over those candidates. Where the two boxes meet (a wait
  shorter than its bounds), the range is the widest the indicator allows;
- its SIDE: `off` when lo >= 1/2 (off for at least half the wait, wherever the true ends lie),
  `on` when hi < 1/2 (on for more than half), else undecided: `unknown` when the timeline's
  coverage alone leaves it undecided (the share at the mapped ends, uncovered time counted as
  on and as off, straddles 1/2: a vCPU the timeline does not cover, or time it marks
  `unknown`), otherwise `uncertain` (the clock's bound lets it fall on either side of 1/2).

The classes (CLASSES):
- 2 vCPUs, source "holder = the other vCPU (exact at 2 vCPUs)": the other vCPU's side decides.
  `holder-preempted` (off), `holder-ran` (on), `uncertain`, `unknown`.
- More than 2 vCPUs, measured over the UNION of the other vCPUs' off time (at 2 vCPUs the union
  is the other vCPU, so the two rules agree):
  - `holder-ran`, source "every other vCPU ran (exact)": the other vCPUs were ALL on for more
    than half the wait (the union of their off time is below half). Whichever of them held the
    lock, and however often it changed hands, the holder ran for more than half the wait.
  - `possibly-preempted`, source "possibly preempted (a bound)": the union of the other vCPUs'
    off time is at least half the wait. AN UPPER BOUND: the off vCPU(s) may not have held the
    lock; a preempted waiter queued ahead (or any idle, preempted vCPU) looks the same. The
    ground truth counts how loose it is (`ground_truth_check`).
  - `uncertain`, `unknown` as above.
  Why the union and not each vCPU alone: with hand-overs during the wait, three vCPUs each off
  for a third of it, each holding while off, leave the holder off for all of it while each
  vCPU alone ran for two thirds; "each other vCPU ran for more than half" would call that
  holder-ran. With a single holder the union rule is only more cautious. Each wait also carries
  every other vCPU's own range (`others`) and the most-off one (`most_off_vcpu`).
- The waiter's own vCPU: its off share (lock-WAITER preemption) is reported as
  `waiter_off_share` and `waiter_side`, never blamed on a holder and never part of the class.
- A wait whose ends the clock cannot map (outside its points) is `unknown`, source "none".

Nested waits: an interrupt that waits for a spinlock inside another wait on the same CPU gives
an inner wait (depth > 0) lying inside the outer one, whose time includes it. Each long wait is
classed on its own; `depth`, `outer` (the index of the enclosing wait, when it is among the
waits given) and `nested_cycles` (the guest cycles of the waits directly inside it) say so. The
waits of each CPU must nest properly (disjoint, or one inside the other and deeper), else
ValueError.
"""
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from numbers import Integral

from .clockfit import ClockMap
from .timeline_input import EMPTY, HostTimeline, IntervalSet, freeze_set

LONG_WAIT_THRESHOLD = 1 << 20  # spinlab's long-wait threshold (records.LONG_WAIT_THRESHOLD)
HALF = Fraction(1, 2)

HOLDER_PREEMPTED = "holder-preempted"
POSSIBLY_PREEMPTED = "possibly-preempted"
HOLDER_RAN = "holder-ran"
UNCERTAIN = "uncertain"
UNKNOWN = "unknown"
CLASSES = (HOLDER_PREEMPTED, POSSIBLY_PREEMPTED, HOLDER_RAN, UNCERTAIN, UNKNOWN)

SOURCE_OTHER_VCPU = "holder = the other vCPU (exact at 2 vCPUs)"
SOURCE_ALL_RAN = "every other vCPU ran (exact)"
SOURCE_BOUND = "possibly preempted (a bound: an off vCPU may not have held the lock)"
SOURCE_UNDECIDED = "the other vCPUs' off time (undecided)"
SOURCE_NONE = "none"


@dataclass
class ClassedWait:
    """One long wait, classed. Shares are (least, most) fractions of the wait's host length."""
    index: int                  # its position in the waits given
    cpu: int
    depth: int
    lock: int
    start: int                  # guest TSC
    end: int
    cycles: int                 # guest TSC cycles
    cls: str                    # one of CLASSES
    source: str
    why: str                    # the sentence behind the class
    holder: int | None          # 2 vCPUs: the other vCPU; else None (not known)
    off_share: tuple | None     # the decided range: the holder's (2 vCPUs) or the union of the others'
    most_off_vcpu: int | None   # the other vCPU with the highest least off share
    others: dict = field(default_factory=dict)   # {vcpu: (least, most)} each other vCPU alone
    waiter_off_share: tuple | None = None
    waiter_side: str = UNKNOWN  # off, on, uncertain, unknown
    host_start: int | None = None   # mapped host TSC and its bounds; None when not mapped
    host_end: int | None = None
    bound_start: int | None = None
    bound_end: int | None = None
    outer: int | None = None    # the enclosing wait's index (depth > 0), when given
    nested_cycles: int = 0      # guest cycles of the waits directly inside this one

    def as_dict(self) -> dict:
        d = asdict(self)
        d["class"] = d.pop("cls")
        d["others"] = {str(k): list(v) for k, v in self.others.items()}
        for k in ("off_share", "waiter_off_share"):
            d[k] = list(d[k]) if d[k] is not None else None
        return d


@dataclass
class Attribution:
    ncpus: int
    threshold: int
    waits: list                 # [ClassedWait], the long waits in input order
    nested_total: int = 0       # every wait given with depth > 0

    def summary(self, phases=None) -> dict:
        """Counts per class and the LHP share, overall and per phase window.
        phases: {name: (host_start, host_end)} or [(name, host_start, host_end)], host TSC; a
        wait belongs to a phase when its mapped host start lies in [host_start, host_end)
        (waits the clock cannot map belong to none)."""
        out = _counts(self.waits, self.ncpus)
        out.update(ncpus=self.ncpus, long_wait_threshold=self.threshold)
        if phases is not None:
            items = phases.items() if isinstance(phases, dict) else [(n, (s, e)) for n, s, e in phases]
            out["phases"] = {}
            for name, (s, e) in items:
                if isinstance(s, bool) or isinstance(e, bool) or not isinstance(s, Integral) \
                        or not isinstance(e, Integral) or e < s:
                    raise ValueError(f"phase '{name}': window ({s!r}, {e!r}) is not two host TSC "
                                     f"values with end >= start")
                inside = [w for w in self.waits if w.host_start is not None and s <= w.host_start < e]
                out["phases"][name] = dict(_counts(inside, self.ncpus), window=[s, e])
        return out


def _counts(waits, ncpus) -> dict:
    counts = {c: 0 for c in CLASSES}
    for w in waits:
        counts[w.cls] += 1
    n = len(waits)
    cls = HOLDER_PREEMPTED if ncpus == 2 else POSSIBLY_PREEMPTED
    undecided = counts[UNCERTAIN] + counts[UNKNOWN]
    share = {
        "class": cls,
        "kind": "exact" if ncpus == 2 else "upper bound",
        "share": counts[cls] / n if n else None,
        "share_max": (counts[cls] + undecided) / n if n else None,
        "holder_ran_share": counts[HOLDER_RAN] / n if n else None,
    }
    return {"long_waits": n, "classes": counts, "lhp_share": share,
            "nested": sum(1 for w in waits if w.depth > 0),
            "waiter_off": sum(1 for w in waits if w.waiter_side == "off"),
            "unmapped": sum(1 for w in waits if w.host_start is None)}


# -- the share of a wait: exact extremes over the clock's boxes

def _min_share(s: IntervalSet, a0, a1, b0, b1) -> Fraction:
    """min over A in [a0, a1], B in [b0, b1] (a1 < b0) of |s n [A, B)| / (B - A), exactly."""
    ca = sorted({a0, a1, *s.breakpoints(a0, a1)})
    cb = sorted({b0, b1, *s.breakpoints(b0, b1)})
    ga = [(a, s.cumulative(a)) for a in ca]
    gb = [(b, s.cumulative(b)) for b in cb]
    (a, fa), (b, fb) = ga[0], gb[-1]
    r = Fraction(fb - fa, b - a)
    while True:
        # Dinkelbach: F(r) = min over the candidates of (G(B) - r B) - (G(A) - r A); F(r) = 0 at the minimum.
        a, fa = max(ga, key=lambda p: p[1] - r * p[0])
        b, fb = min(gb, key=lambda p: p[1] - r * p[0])
        if (fb - r * b) - (fa - r * a) >= 0:
            return r
        r = Fraction(fb - fa, b - a)


def _share_range(off: IntervalSet, on: IntervalSet, h0, h1, e0, e1):
    """((lo, hi) over the clock's boxes, (lo0, hi0) at the mapped ends): the off share's least
    (uncovered time as on) and most (uncovered time as off)."""
    a0, a1, b0, b1 = h0 - e0, h0 + e0, h1 - e1, h1 + e1
    if a1 < b0:
        lo = _min_share(off, a0, a1, b0, b1)
        hi = 1 - _min_share(on, a0, a1, b0, b1)
    else:  # the boxes meet: any sub-interval of [a0, b1) may be the wait
        lo = Fraction(1) if off.measure(a0, b1) == b1 - a0 else Fraction(0)
        hi = Fraction(0) if on.measure(a0, b1) == b1 - a0 else Fraction(1)
    if h1 > h0:
        at = (Fraction(off.measure(h0, h1), h1 - h0), 1 - Fraction(on.measure(h0, h1), h1 - h0))
    else:
        at = None
    return (lo, hi), at


def _side(rng, at) -> str:
    lo, hi = rng
    if lo >= HALF:
        return "off"
    if hi < HALF:
        return "on"
    if at is not None and at[0] < HALF <= at[1]:
        return "unknown"
    return "uncertain"


def _f(rng):
    return (float(rng[0]), float(rng[1]))


# -- input checks

def _int(value, what, low=0):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{what} is {value!r}, not an integer")
    if value < low:
        raise ValueError(f"{what} is {value}, below {low}")
    return int(value)


def _wait_fields(w, i, ncpus):
    try:
        if isinstance(w, tuple) and not hasattr(w, "cpu"):
            cpu, depth, lock, start, end = w
        else:
            cpu, depth, lock, start, end = w.cpu, w.depth, w.lock, w.start, w.end
    except (TypeError, ValueError, AttributeError):
        raise ValueError(f"wait {i} is {w!r}: neither a records.Wait nor (cpu, depth, lock, start, end)") from None
    cpu = _int(cpu, f"wait {i}'s cpu")
    if cpu >= ncpus:
        raise ValueError(f"wait {i}: cpu {cpu}, but the guest has {ncpus} vCPUs (0-{ncpus - 1})")
    depth = _int(depth, f"wait {i}'s depth")
    lock = _int(lock, f"wait {i}'s lock")
    start, end = _int(start, f"wait {i}'s start_tsc"), _int(end, f"wait {i}'s end_tsc")
    if end < start:
        raise ValueError(f"wait {i}: end_tsc {end} is before start_tsc {start}")
    return cpu, depth, lock, start, end


def _nesting(waits):
    """{index: enclosing index or None}; ValueError where one CPU's waits do not nest."""
    outer = {}
    by_cpu = {}
    for i, (cpu, depth, _, start, end) in enumerate(waits):
        by_cpu.setdefault(cpu, []).append((start, -end, depth, i))
    for cpu, rows in by_cpu.items():
        rows.sort()
        stack = []
        for start, neg_end, depth, i in rows:
            end = -neg_end
            while stack and waits[stack[-1]][4] <= start:
                stack.pop()
            if stack:
                j = stack[-1]
                if end > waits[j][4]:
                    raise ValueError(f"waits {j} and {i} on cpu {cpu} overlap without one lying inside "
                                     f"the other ([{waits[j][3]}, {waits[j][4]}) and [{start}, {end}))")
                if depth <= waits[j][1]:
                    raise ValueError(f"wait {i} (depth {depth}) lies inside wait {j} (depth {waits[j][1]}) "
                                     f"on cpu {cpu} but is not deeper")
                outer[i] = j if depth == waits[j][1] + 1 else None
            else:
                outer[i] = None
            stack.append(i)
    return outer


# -- the classifier

def attribute(waits, ncpus: int, clock: ClockMap, timeline: HostTimeline, *,
              threshold: int = LONG_WAIT_THRESHOLD) -> Attribution:
    """Class every wait of at least `threshold` guest cycles (see the module's docstring)."""
    ncpus = _int(ncpus, "ncpus")
    if ncpus < 2:
        raise ValueError(f"ncpus is {ncpus}: a spinlock wait needs a holder on another vCPU, so "
                         f"attribution needs at least 2 vCPUs")
    threshold = _int(threshold, "threshold", low=1)
    if not isinstance(clock, ClockMap):
        raise ValueError(f"clock is {type(clock).__name__}, not a clockfit.ClockMap (clockfit.fit(points))")
    if not isinstance(timeline, HostTimeline):
        raise ValueError(f"timeline is {type(timeline).__name__}, not a timeline_input.HostTimeline")
    for v in timeline.vcpus:
        if v >= ncpus:
            raise ValueError(f"the timeline has vCPU {v}, but the guest has {ncpus} vCPUs (0-{ncpus - 1})")
    rows = [_wait_fields(w, i, ncpus) for i, w in enumerate(waits)]
    outer = _nesting(rows)
    nested_cycles = {}
    for i, j in outer.items():
        if j is not None:
            nested_cycles[j] = nested_cycles.get(j, 0) + rows[i][4] - rows[i][3]

    # per waiter CPU: the union of the others' off time and the time all of them were surely on
    sets = {}
    for c in range(ncpus):
        others = [v for v in range(ncpus) if v != c]
        off, on = EMPTY, None
        for v in others:
            off = off.union(timeline.off_set(v))
            on = timeline.on_set(v) if on is None else on.intersect(timeline.on_set(v))
        sets[c] = (others, off, on)

    out = []
    for i, (cpu, depth, lock, start, end) in enumerate(rows):
        if end - start < threshold:
            continue
        others, off_u, on_i = sets[cpu]
        cw = ClassedWait(index=i, cpu=cpu, depth=depth, lock=lock, start=start, end=end, cycles=end - start,
                         cls=UNKNOWN, source=SOURCE_NONE, why="", holder=others[0] if ncpus == 2 else None,
                         off_share=None, most_off_vcpu=None, outer=outer[i],
                         nested_cycles=nested_cycles.get(i, 0))
        out.append(cw)
        if not (clock.covers(start) and clock.covers(end)):
            cw.why = (f"the wait [{start}, {end}] is outside the clock points' span "
                      f"[{clock.first_guest}, {clock.last_guest}] (guest TSC): it cannot be placed in host time")
            continue
        iv = clock.to_host_interval(start, end)
        h0, h1, e0, e1 = iv
        cw.host_start, cw.host_end, cw.bound_start, cw.bound_end = iv
        rng, at = _share_range(off_u, on_i, h0, h1, e0, e1)
        side = _side(rng, at)
        cw.off_share = _f(rng)
        each = {}
        for v in others:
            r, _ = _share_range(timeline.off_set(v), timeline.on_set(v), h0, h1, e0, e1)
            each[v] = r
        cw.others = {v: _f(r) for v, r in each.items()}
        cw.most_off_vcpu = max(others, key=lambda v: (each[v][0], each[v][1], -v))
        wr, wat = _share_range(timeline.off_set(cpu), timeline.on_set(cpu), h0, h1, e0, e1)
        cw.waiter_off_share, cw.waiter_side = _f(wr), _side(wr, wat)
        lo, hi = cw.off_share
        if ncpus == 2:
            cw.source = SOURCE_OTHER_VCPU
            h = others[0]
            cw.cls = {"off": HOLDER_PREEMPTED, "on": HOLDER_RAN, "uncertain": UNCERTAIN, "unknown": UNKNOWN}[side]
            cw.why = {
                "off": f"vCPU {h} was off for at least half the wait (off share {lo:.3f}-{hi:.3f})",
                "on": f"vCPU {h} was on for more than half the wait (off share {lo:.3f}-{hi:.3f})",
                "uncertain": f"vCPU {h}'s off share {lo:.3f}-{hi:.3f} straddles 1/2 within the clock's "
                             f"bound (+-{e0}, +-{e1} host cycles)",
                "unknown": f"the timeline does not cover vCPU {h} over enough of the wait to decide "
                           f"(off share {lo:.3f}-{hi:.3f})",
            }[side]
        else:
            names = ", ".join(str(v) for v in others)
            if side == "on":
                cw.cls, cw.source = HOLDER_RAN, SOURCE_ALL_RAN
                cw.why = (f"vCPUs {names} were all on for more than half the wait (off share of any "
                          f"of them {lo:.3f}-{hi:.3f}): whichever held the lock ran")
            elif side == "off":
                cw.cls, cw.source = POSSIBLY_PREEMPTED, SOURCE_BOUND
                cw.why = (f"some of vCPUs {names} were off for at least half the wait (off share of "
                          f"any of them {lo:.3f}-{hi:.3f}; most off alone: vCPU {cw.most_off_vcpu}); "
                          f"an upper bound: the off vCPU may not have held the lock")
            else:
                cw.cls, cw.source = (UNCERTAIN if side == "uncertain" else UNKNOWN), SOURCE_UNDECIDED
                cw.why = (f"the off share of any of vCPUs {names}, {lo:.3f}-{hi:.3f}, straddles 1/2 " +
                          ("within the clock's bound" if side == "uncertain" else
                           "where the timeline does not cover them"))
    return Attribution(ncpus=ncpus, threshold=threshold, waits=out,
                       nested_total=sum(1 for r in rows if r[1] > 0))


# -- the ground truth

def ground_truth_check(classed: Attribution, holds, frozen, *, lock) -> dict:
    """Check the classes against a holder known independently (a test module's records).

    holds: [(cpu, acquire_tsc, release_tsc)] of the ground-truth lock, guest TSC.
    frozen: {vcpu: [(host_start, host_end)]}, the effective freeze windows (host TSC; an end of
        None: never seen resumed).
    lock: the ground-truth lock's address; only long waits on it are checked (None: every
        long wait in `classed`, for a caller that passed only that lock's waits).

    Each wait's KNOWN HOLDER is the hold in progress at the wait's end, or the last one before
    it: of the holds on other vCPUs that began by the wait's end, the one that began last,
    provided it did not end before the wait began (else the wait has no known holder). Its
    FROZEN SHARE is that vCPU's frozen time inside the wait's mapped host interval [host_start,
    host_end) (the clock's estimate, without its bound) over that interval's length.

    Returns: counts and fractions per class among the waits whose known holder was frozen for
    more than half the wait (`frozen_holder_waits`, the denominator); `possibly_preempted` (every
    such-classed wait with a known holder) and `possibly_preempted_holder_ran` (those whose
    holder was frozen for at most half the wait: how loose the bound is); the issue's bar
    (`meets_bar`, `bar`): at 2 vCPUs at least 95 % holder-preempted, at more at least 95 %
    holder-preempted or possibly-preempted, and none holder-ran, over at least one wait.
    """
    if not isinstance(classed, Attribution):
        raise ValueError(f"classed is {type(classed).__name__}, not the Attribution attribute() returns")
    ncpus = classed.ncpus
    hs = []
    for k, h in enumerate(holds):
        try:
            cpu, acq, rel = h
        except (TypeError, ValueError):
            raise ValueError(f"hold {k} is {h!r}, not (cpu, acquire_tsc, release_tsc)") from None
        cpu = _int(cpu, f"hold {k}'s cpu")
        if cpu >= ncpus:
            raise ValueError(f"hold {k}: cpu {cpu}, but the guest has {ncpus} vCPUs (0-{ncpus - 1})")
        acq, rel = _int(acq, f"hold {k}'s acquire_tsc"), _int(rel, f"hold {k}'s release_tsc")
        if rel < acq:
            raise ValueError(f"hold {k}: release_tsc {rel} is before acquire_tsc {acq}")
        hs.append((acq, rel, cpu))
    hs.sort()
    acquires = [h[0] for h in hs]
    fz = {}
    for v, windows in dict(frozen).items():
        v = _int(v, "a frozen vCPU index")
        if v >= ncpus:
            raise ValueError(f"frozen windows for vCPU {v}, but the guest has {ncpus} vCPUs (0-{ncpus - 1})")
        fz[v] = freeze_set(windows, f"vCPU {v}'s freeze window")

    counts = {c: 0 for c in CLASSES}
    on_lock = no_holder = unmapped = pp_total = pp_ran = 0
    details = []
    for w in classed.waits:
        if lock is not None and w.lock != lock:
            continue
        on_lock += 1
        holder = None
        for k in range(bisect_right(acquires, w.end) - 1, -1, -1):
            acq, rel, cpu = hs[k]
            if cpu != w.cpu:
                if rel >= w.start:
                    holder = cpu
                break
        if holder is None:
            no_holder += 1
            details.append({"index": w.index, "class": w.cls, "holder": None, "frozen_share": None})
            continue
        if w.host_start is None:
            unmapped += 1
            details.append({"index": w.index, "class": w.cls, "holder": holder, "frozen_share": None})
            continue
        length = w.host_end - w.host_start
        share = Fraction(fz.get(holder, EMPTY).measure(w.host_start, w.host_end), length) if length > 0 else Fraction(0)
        details.append({"index": w.index, "class": w.cls, "holder": holder, "frozen_share": float(share)})
        if share > HALF:
            counts[w.cls] += 1
        if w.cls == POSSIBLY_PREEMPTED:
            pp_total += 1
            if share <= HALF:
                pp_ran += 1
    n = sum(counts.values())
    fractions = {c: (counts[c] / n if n else None) for c in CLASSES}
    if ncpus == 2:
        good = counts[HOLDER_PREEMPTED]
        bar = "at 2 vCPUs: at least 95 % holder-preempted and none holder-ran"
    else:
        good = counts[HOLDER_PREEMPTED] + counts[POSSIBLY_PREEMPTED]
        bar = f"at {ncpus} vCPUs: at least 95 % holder-preempted or possibly-preempted and none holder-ran"
    meets = n > 0 and good >= 0.95 * n and counts[HOLDER_RAN] == 0
    return {"ncpus": ncpus, "lock": lock, "waits_on_lock": on_lock, "no_known_holder": no_holder,
            "unmapped": unmapped, "frozen_holder_waits": n, "counts": counts, "fractions": fractions,
            "possibly_preempted": pp_total, "possibly_preempted_holder_ran": pp_ran,
            "bar": bar, "meets_bar": meets, "details": details}
