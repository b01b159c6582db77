"""Long waits as columns, and their LHP attribution in numpy (a run may list a million).

Contract:
- `LongWaits.from_json(items, where)`: a snapshot's "long_waits" list, checked as the results
  contract says (the first bad wait raises load's ContractError naming it, as before), kept as one
  numpy array per field (no Python object per wait). It reads like the list of dicts it replaces:
  len(), iteration and [i] give the same dict load used to build; `LongWaits.of(x)` accepts
  either (tests and tools build snapshots from dicts).
- `classify(snap, timeline, clock, threshold)`: lhp's measurement and attribution of every long
  wait (>= threshold) of one snapshot, as an `Attributed` table of columns. It is the one
  implementation of the rules lhp.py states, over arrays: per vCPU, a binary search in the
  sorted union of its off intervals (cumulative off cycles before each) gives the off cycles
  before any time, so each side of each wait costs two searches. A holder that changed at an unknown moment (gap_off_range:
  the extremes over every moment) is measured wait by wait, the rest over all waits at once.
  tests/lhp_reference.py keeps the rules' per-wait definition, never called here;
  tests/test_rules_reference.py checks on random waits that this code gives exactly its numbers,
  and tests/test_golden_numbers.py that the report's numbers did not change.
- `count(out, att)` and `fraction_table(atts)`: long_waits_share's counts over arrays,
  dict keys in the order of first appearance (as the per-wait reference inserts them).
- `Rows`: long_waits_share's "waits", the per-wait dicts (`Attributed.row`) made only when
  read (tools, tests); the report's tables and figures read the columns (`Rows.columns`).
- `window(att, start, end)`: the verdict's view of the waits that spun inside a repetition.
"""
import numpy as np

from . import contract as c
from . import lhp

# A side's codes. The holder's side may also be BLOCKED (off for the threshold only counting the
# time its thread blocked by itself: lhp.HOLDER_BLOCKED) or POSSIBLY_OFF (its holder is one of
# several vCPUs and one of them was off: lhp.POSSIBLY_PREEMPTED); the waiter's is one of the first four.
SIDES = ("off", "on", "uncertain", "unknown", "blocked", "possibly_off")
OFF, ON, UNCERTAIN, UNKNOWN, BLOCKED, POSSIBLY_OFF = range(6)
NO_SOURCE = 2  # lhp.SOURCES[2] == "none"
_INT_FIELDS = ("cpu", "start_tsc", "wait_cycles")
UNLISTED_LHP = "unknown"  # a wait's lhp_class when its entry has none (as check_long_wait reads it)


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _cpu_or_none(v) -> int:
    """load's reading of holder_cpu / holder_end_cpu: an int >= 0, else none (-1 here)."""
    return int(v) if isinstance(v, int) and v >= 0 else -1


def _count_or_none(v) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def check_holds(w: dict, where: str) -> list | None:
    """A long wait's "holds": [[cpu, from_tsc or null], ...], the holders in order (optional)."""
    holds = w.get("holds")
    if holds is None:
        return None
    if not isinstance(holds, list) or not holds or any(
            not isinstance(h, list) or len(h) != 2 or h[0] is None or not all(_count_or_none(x) for x in h)
            for h in holds):
        raise c.ContractError(f"{where}: 'holds' must be a non-empty list of [cpu, from_tsc or null] "
                              f"(integers >= 0), got {holds!r}")
    return [list(h) for h in holds]


def check_long_wait(w: dict, where: str) -> dict:
    """One entry of a snapshot's "long_waits", checked as the results contract says (the first bad
    field raises ContractError naming it), as the dict the per-wait code reads."""
    holder, holder_end = w.get("holder_cpu"), w.get("holder_end_cpu")
    lhp_class = w.get("lhp_class", "unknown")
    if lhp_class not in c.LHP_CLASSES:
        raise c.ContractError(f"{where}: lhp_class {lhp_class!r} is none of {', '.join(c.LHP_CLASSES)}")
    steal = {k: c.need_count(w, k, where) if k in w else None for k in ("holder_steal_ns", "waiter_steal_ns")}
    return {"cpu": c.need_count(w, "cpu", where), "class": c.need(w, "class", str, where),
            "start_tsc": c.need_count(w, "start_tsc", where), "wait_cycles": c.need_count(w, "wait_cycles", where),
            "holder_cpu": holder if isinstance(holder, int) and holder >= 0 else None,
            "holder_end_cpu": holder_end if isinstance(holder_end, int) and holder_end >= 0 else None,
            "lhp_class": lhp_class, "holds": check_holds(w, where), **steal}



class LongWaits:
    """One snapshot's listed long waits as columns (see the module's contract). Absent values
    (no holder known, no steal count, an unplaced hand-over) are -1."""

    def __init__(self, cpu, lock_class, class_names, start, wait, holder, holder_end, lhp_code, lhp_names,
                 holder_steal, waiter_steal, holds_at, holds_cpu, holds_from):
        self.cpu, self.lock_class, self.class_names = cpu, lock_class, class_names
        self.start, self.wait, self.holder, self.holder_end = start, wait, holder, holder_end
        self.lhp_code, self.lhp_names = lhp_code, lhp_names
        self.holder_steal, self.waiter_steal = holder_steal, waiter_steal
        # the hand-over chains: wait i's holds are holds_cpu/holds_from[holds_at[i]:holds_at[i+1]]
        self.holds_at, self.holds_cpu, self.holds_from = holds_at, holds_cpu, holds_from
        # True where the holder was named by a rule (lhp.apply_holder_rule), not by the guest;
        # rule_cpus N > 2: those waits' holder is one of the other N - 1 vCPUs (0: no such rule)
        self.holder_by_rule = np.zeros(cpu.size, dtype=bool)
        self.rule_cpus = 0

    @classmethod
    def of(cls, waits):
        """waits as LongWaits: as it is, or built from a list of load's dicts (trusted)."""
        return waits if isinstance(waits, LongWaits) else cls._build(waits)

    @classmethod
    def from_json(cls, items: list, where: str):
        """A snapshot's "long_waits" (JSON objects), checked; where names the list in errors."""
        if not cls._well_formed(items):
            items = [check_long_wait(w, f"{where}[{i}]") for i, w in enumerate(items)]  # names the first bad wait
        else:
            for i in (i for i, w in enumerate(items) if w.get("holds") is not None):
                check_holds(items[i], f"{where}[{i}]")
        return cls._build(items)

    @staticmethod
    def _well_formed(items: list) -> bool:
        """Every wait as check_long_wait accepts it (holds are checked apart, where present)."""
        if set(map(type, items)) - {dict}:
            return False
        try:
            for k in _INT_FIELDS:
                vals = [w[k] for w in items]
                if set(map(type, vals)) - {int} or (vals and min(vals) < 0):
                    return False
            if set(type(w["class"]) for w in items) - {str}:
                return False
        except KeyError:
            return False
        if {w.get("lhp_class", UNLISTED_LHP) for w in items} - set(c.LHP_CLASSES):
            return False
        for k in ("holder_steal_ns", "waiter_steal_ns"):
            vals = [w[k] for w in items if k in w]
            if set(map(type, vals)) - {int} or (vals and min(vals) < 0):
                return False
        return True

    @classmethod
    def _build(cls, items: list):
        i64 = lambda xs: np.array(xs, dtype=np.int64) if xs else np.zeros(0, dtype=np.int64)
        lock_codes, lock_names = _codes([w["class"] for w in items])
        lhp_codes, lhp_names = _codes([w.get("lhp_class", UNLISTED_LHP) for w in items])
        opt = lambda k: i64([-1 if w.get(k) is None else w[k] for w in items])
        at, hc, hf = [0], [], []
        for w in items:
            for cpu, frm in w.get("holds") or ():
                hc.append(cpu)
                hf.append(-1 if frm is None else frm)
            at.append(len(hc))
        return cls(i64([w["cpu"] for w in items]), lock_codes, lock_names, i64([w["start_tsc"] for w in items]),
                   i64([w["wait_cycles"] for w in items]), i64([_cpu_or_none(w.get("holder_cpu")) for w in items]),
                   i64([_cpu_or_none(w.get("holder_end_cpu")) for w in items]), lhp_codes, lhp_names,
                   opt("holder_steal_ns"), opt("waiter_steal_ns"), i64(at), i64(hc), i64(hf))

    def __len__(self) -> int:
        return int(self.cpu.size)

    def holds(self, i: int) -> list | None:
        a, b = self.holds_at[i], self.holds_at[i + 1]
        if a == b:
            return None
        return [[int(cpu), None if frm < 0 else int(frm)] for cpu, frm in zip(self.holds_cpu[a:b], self.holds_from[a:b])]

    def __getitem__(self, i: int) -> dict:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        opt = lambda v: None if v < 0 else int(v)
        return {"cpu": int(self.cpu[i]), "class": self.class_names[self.lock_class[i]],
                "start_tsc": int(self.start[i]), "wait_cycles": int(self.wait[i]),
                "holder_cpu": opt(self.holder[i]), "holder_end_cpu": opt(self.holder_end[i]),
                "lhp_class": self.lhp_names[self.lhp_code[i]], "holds": self.holds(i),
                "holder_steal_ns": opt(self.holder_steal[i]), "waiter_steal_ns": opt(self.waiter_steal[i]),
                **({"holder_by_rule": True} if self.holder_by_rule[i] else {})}

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, LongWaits)) else NotImplemented

    def has_lhp_class(self, name: str) -> bool:
        return name in self.lhp_names and bool(np.any(self.lhp_code == self.lhp_names.index(name)))


def _codes(values: list) -> tuple:
    """(codes array, names list) of a list of strings, names in order of first appearance."""
    names = {}
    codes = np.array([names.setdefault(v, len(names)) for v in values], dtype=np.int32)
    return codes, list(names)


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
    side = np.where(lo >= threshold * wait, OFF, np.where(hi < threshold * wait, ON, UNCERTAIN))
    anys = np.where(lo > 0, OFF, np.where(hi == 0, ON, UNCERTAIN))
    return np.where(known, side, UNKNOWN).astype(np.int8), np.where(known, anys, UNKNOWN).astype(np.int8)


class Attributed:
    """The long waits (>= threshold) of one snapshot, measured and attributed (classify),
    as columns; pos: their positions in the snapshot's LongWaits. NaN in the
    float columns where lhp gives None; sides as codes into SIDES, sources into lhp.SOURCES."""

    def __init__(self, lw: LongWaits, pos, rep: int, measured: bool):
        self.lw, self.pos, self.rep, self.measured = lw, pos, rep, measured
        n = pos.size
        nan = lambda: np.full(n, np.nan)
        self.host_start, self.bound, self.h_lo, self.h_hi, self.w_lo, self.w_hi = (nan() for _ in range(6))
        # the same ranges counting only the time each vCPU was preempted or frozen (not blocked)
        self.hp_lo, self.hp_hi, self.wp_lo, self.wp_hi = (nan() for _ in range(4))
        self.t = {k: np.full(n, UNKNOWN, dtype=np.int8) for k in ("holder", "holder_any", "waiter", "waiter_any")}
        self.side, self.source, self.disagrees = {}, {}, {}
        self.in_repetition = np.ones(n, dtype=bool)

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

    def lhp(self) -> np.ndarray:
        """The final class of each wait (names: lhp.class_of of its two sides)."""
        return CLASS_NAMES[self.side["holder"] * 4 + self.side["waiter"]]

    def has_holds(self):
        return self.lw.holds_at[self.pos + 1] > self.lw.holds_at[self.pos]

    def row(self, k: int) -> dict:
        """Wait k as long_waits_share lists it."""
        w = self.lw[int(self.pos[k])]
        opt = lambda x: None if np.isnan(x) else float(x)
        rng = lambda lo, hi: None if np.isnan(lo) else [float(lo), float(hi)]
        base = {"host_start": opt(self.host_start[k]), "bound_cycles": opt(self.bound[k]),
                "holder_off_cycles": rng(self.h_lo[k], self.h_hi[k]),
                "waiter_off_cycles": rng(self.w_lo[k], self.w_hi[k]), "holders": lhp.holders_of(w)}
        if self.measured:
            for name in ("holder", "waiter"):
                base[f"timeline_{name}"] = SIDES[self.t[name][k]]
                base[f"timeline_{name}_any"] = SIDES[self.t[name + "_any"][k]]
            base["timeline_lhp"] = str(CLASS_NAMES[self.t["holder"][k] * 4 + self.t["waiter"][k]])
        r = {}
        for name in ("holder", "waiter"):
            r[f"{name}_side"] = SIDES[self.side[name][k]]
            r[f"{name}_source"] = lhp.SOURCES[self.source[name][k]]
            r[f"{name}_disagrees"] = bool(self.disagrees[name][k])
        r["lhp"] = str(CLASS_NAMES[self.side["holder"][k] * 4 + self.side["waiter"][k]])
        r["source"] = r["holder_source"]
        return {**w, "rep": self.rep, **base, **r, "in_repetition": bool(self.in_repetition[k])}


def _class_names():
    """Indexed by holder side * 4 + waiter side (the waiter's side is one of the first four)."""
    return np.array([lhp.class_of(SIDES[h], SIDES[w]) for h in range(len(SIDES)) for w in range(4)], dtype=object)


CLASS_NAMES = _class_names()


def _steal(lw: LongWaits, pos):
    """lhp.steal_sides per wait: (holder, waiter) as -1 unknown, 0 no steal seen, 1 lost time."""
    table = np.array([[-1 if x is None else int(x) for x in lhp.steal_sides(n)] for n in lw.lhp_names] or
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
    """Per wait: (least, most) summed over its pieces in order (as lhp's sum()), most capped at
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


def _holder_range(lw: LongWaits, pos, a, e, wait, finite, index: dict, any_other):
    """(least, most) off cycles of each wait's holder against index (NaN: not measurable). For the
    any_other waits (a rule's: the holder is one of the other lw.rule_cpus - 1 vCPUs), the most
    off of them, tried one by one: NaN where any of them is not covered."""
    n = pos.size
    h_lo, h_hi = _pieces_range(lw, pos, a, e, wait, finite, index, None)
    if np.any(any_other):
        cpu, cpus = lw.cpu[pos], lw.rule_cpus
        m_lo, m_hi = np.full(n, -np.inf), np.full(n, -np.inf)
        for d in range(1, cpus):
            lo, hi = _pieces_range(lw, pos, a, e, wait, finite, index, np.where(any_other, (cpu + d) % cpus, -1))
            m_lo, m_hi = np.maximum(m_lo, lo), np.maximum(m_hi, hi)  # NaN (not covered) wins
        h_lo, h_hi = np.where(any_other, m_lo, h_lo), np.where(any_other, m_hi, h_hi)
    return h_lo, h_hi


def _pieces_range(lw: LongWaits, pos, a, e, wait, finite, index: dict, holder):
    """The holder's range from its pieces (chain_pieces); a gap of unknown moment by gap_off_range."""
    k, v, lo, hi, slow = holder_pieces(lw, pos, a, e, wait, finite, holder)
    cov, least, most = _ranges(index, v, lo, hi, e[k])
    h_lo, h_hi = _sum_pieces(pos.size, k, cov, least, most, wait)
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
    preemption uncertain is UNCERTAIN; a rule's possible holder off is POSSIBLY_OFF."""
    side = all_off.copy()
    side[(all_off == OFF) & (preempted == ON)] = BLOCKED
    side[(all_off == OFF) & (preempted == UNCERTAIN)] = UNCERTAIN
    side[(side == OFF) & any_other] = POSSIBLY_OFF
    return side


def classify(snap, index: dict | None, cmap, threshold: int, index_pre: dict | None = None) -> Attributed:
    """The host-timeline measurement and the attribution of every long wait (>= threshold) of
    snap, over arrays (the rules: lhp.py).
    index: lhp.off_index of the snapshot's repetition and cmap its ClockMap (None: no timeline
    or clock, so nothing is measured); index_pre: the same without the blocked rows
    (off_index(blocked=False); None: the timeline has none, so it is index)."""
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
        a, bound = lhp.host_map(cmap, lw.start[pos])
        finite = np.isfinite(bound)
        out.host_start, out.bound = a, np.where(finite, bound, np.nan)
        e = np.where(finite, bound, 0.0)
        pre = index if index_pre is None else index_pre
        out.h_lo, out.h_hi = _holder_range(lw, pos, a, e, wait, finite, index, any_other)
        out.hp_lo, out.hp_hi = (out.h_lo, out.h_hi) if pre is index else _holder_range(lw, pos, a, e, wait, finite, pre, any_other)
        out.w_lo, out.w_hi = _waiter_range(lw, pos, a, e, wait, finite, index)
        out.wp_lo, out.wp_hi = (out.w_lo, out.w_hi) if pre is index else _waiter_range(lw, pos, a, e, wait, finite, pre)
        out.t["holder"], out.t["holder_any"] = _sides(out.h_lo, out.h_hi, wait, lhp.HOLDER_OFF_MIN)
        out.t["waiter"], out.t["waiter_any"] = _sides(out.w_lo, out.w_hi, wait, lhp.WAITER_OFF_MIN)
    steal = _steal(lw, pos)
    for i, name in enumerate(("holder", "waiter")):
        tl, st = out.t[name], steal[i]
        has_tl = tl != UNKNOWN
        told = tl  # the timeline's side apart from why the vCPU was off (what the steal time is compared with)
        if name == "holder" and index is not None:
            told = _holder_side(tl, _sides(out.hp_lo, out.hp_hi, wait, lhp.HOLDER_OFF_MIN)[0], any_other)
        out.side[name] = np.where(has_tl, told, np.where(st == 1, OFF, UNKNOWN)).astype(np.int8)
        out.source[name] = np.where(has_tl, 0, np.where(st == 1, 1, NO_SOURCE)).astype(np.int8)
        out.disagrees[name] = has_tl & (st >= 0) & (tl <= ON) & ((st == 1) != (tl == OFF))
    return out


def _scatter(n: int, k, values):
    out = np.zeros(n)
    out[k] = values
    return out


# Counts over a phase ----------------------------------------------------------------------------

def _holds_counts(att: Attributed):
    """Per selected wait: (its holders changed (lhp.holders_of has more than one), hand-overs
    placed, hand-overs not placed)."""
    lw, pos = att.lw, att.pos
    h0, h1 = lw.holder[pos], lw.holder_end[pos]
    changed = (h0 >= 0) & (h1 >= 0) & (h0 != h1)
    placed, unplaced = np.zeros(pos.size, dtype=np.int64), np.zeros(pos.size, dtype=np.int64)
    with_holds = np.flatnonzero(att.has_holds())
    if with_holds.size:
        a, b = lw.holds_at[pos[with_holds]], lw.holds_at[pos[with_holds] + 1]
        owner = np.repeat(with_holds, b - a)
        flat = np.concatenate([np.arange(x, y) for x, y in zip(a.tolist(), b.tolist())])
        first = np.repeat(a, b - a) == flat
        cpu, frm = lw.holds_cpu[flat], lw.holds_from[flat]
        switch = ~first & (cpu != np.concatenate(([0], cpu[:-1])))
        changed[with_holds] = np.bincount(owner, weights=switch, minlength=pos.size)[with_holds] > 0
        placed += np.bincount(owner, weights=~first & (frm >= 0), minlength=pos.size).astype(np.int64)
        unplaced += np.bincount(owner, weights=~first & (frm < 0), minlength=pos.size).astype(np.int64)
    return changed, placed, unplaced


def count(out: dict, att: Attributed):
    """Adds the waits of att to long_waits_share's counts in out."""
    n = len(att)
    out["long_waits"] += n
    hs = att.side["holder"]
    for code, key in ((OFF, "holder_off"), (ON, "holder_on"), (UNCERTAIN, "uncertain"), (UNKNOWN, "unknown"),
                      (BLOCKED, "holder_blocked"), (POSSIBLY_OFF, "possibly_preempted")):
        out[key] += int(np.count_nonzero(hs == code))
    for side, lo, hi, plo, phi in (("holder", att.h_lo, att.h_hi, att.hp_lo, att.hp_hi),
                                   ("waiter", att.w_lo, att.w_hi, att.wp_lo, att.wp_hi)):
        ok = ~np.isnan(lo) & ~np.isnan(plo)  # middles of the ranges, as fraction_table
        off, pre = ((lo[ok] + hi[ok]) / 2).sum(), ((plo[ok] + phi[ok]) / 2).sum()
        out["off_cycles"][side]["off"] += float(off)
        out["off_cycles"][side]["blocked"] += float(max(0.0, off - pre))
    src = att.source["holder"]
    out["from_guest"] += int(np.count_nonzero(src == 1))
    out["from_timeline"] += int(np.count_nonzero(src == 0))
    changed, placed, unplaced = _holds_counts(att)
    out["holder_changed"] += int(np.count_nonzero(changed))
    out["handovers_placed"] += int(placed.sum())
    out["handovers_unplaced"] += int(unplaced.sum())
    out["outside_repetition"] += int(np.count_nonzero(~att.in_repetition))
    d, steal = out["disagreements"], _steal(att.lw, att.pos)
    for i, side in enumerate(("holder", "waiter")):
        s = att.source[side]
        for code, name in enumerate(lhp.SOURCES):
            out["sources"][side][name] += int(np.count_nonzero(s == code))
        d["sides_compared"] += int(np.count_nonzero((s == 0) & (steal[i] >= 0) & (att.side[side] <= ON)))
        dis = att.disagrees[side]
        d["total"] += int(np.count_nonzero(dis))
        d[side] += int(np.count_nonzero(dis))
        d["steal_off_timeline_on"] += int(np.count_nonzero(dis & (steal[i] == 1)))
        d["steal_silent_timeline_off"] += int(np.count_nonzero(dis & (steal[i] != 1)))
    if att.measured and n:
        _agreement(out["agreement"], att, steal)


def _agreement(agreement: dict, att: Attributed, steal):
    """The guest's class against the timeline's (by the thresholds, and by any off time), for
    waits with both; keys in order of first appearance."""
    known = np.flatnonzero(steal[0] >= 0)  # the guest's class is not 'unknown'
    if not known.size:
        return
    guest = att.lw.lhp_code[att.pos[known]]
    for key, h, w in (("guest_vs_timeline", "holder", "waiter"), ("guest_vs_timeline_any_overlap", "holder_any", "waiter_any")):
        timeline = (att.t[h] * 4 + att.t[w])[known]
        pair = guest.astype(np.int64) * 32 + timeline
        uniq, first, cnt = np.unique(pair, return_index=True, return_counts=True)
        for p, c_ in sorted(zip(uniq.tolist(), cnt.tolist()), key=lambda pc: first[np.searchsorted(uniq, pc[0])]):
            row = agreement[key].setdefault(att.lw.lhp_names[p // 32], {})
            t = str(CLASS_NAMES[p % 32])
            row[t] = row.get(t, 0) + c_


def fraction_table(atts: list) -> dict:
    """Holder-off fraction against wait length, over the waits of atts with a holder range: for
    each wait-length octave (2^k cycles), the count of waits per holder-off-fraction bin (by the
    middle of its range)."""
    edges = lhp.FRACTION_EDGES
    table = {}
    for att in atts:
        ok = ~np.isnan(att.h_lo)
        w = att.wait_cycles()[ok]
        frac = np.minimum(1.0, (att.h_lo[ok] + att.h_hi[ok]) / 2 / w.astype(np.float64))
        k = _floor_log2(w)
        b = np.searchsorted(edges, frac, side="right") - 1
        bins = len(edges) - 1
        counts = np.bincount(k * bins + b, minlength=64 * bins).reshape(-1, bins) if w.size else np.zeros((0, bins))
        for kk in np.flatnonzero(counts.sum(axis=1)).tolist():
            row = table.setdefault(f"2^{kk}", [0] * bins)
            for bb in np.flatnonzero(counts[kk]).tolist():
                row[bb] += int(counts[kk, bb])
    return {"fraction_edges": [round(x, 2) for x in edges[:-1]] + [1.0],
            "by_wait_octave": dict(sorted(table.items(), key=lambda kv: int(kv[0][2:])))}


def _floor_log2(x):
    """int(x).bit_length() - 1 per element of an int64 array (x >= 1)."""
    k = np.frexp(x.astype(np.float64))[1].astype(np.int64) - 1
    k -= (np.left_shift(np.int64(1), np.maximum(k, 0)) > x)  # float rounding up to a power of two
    return k


class Rows:
    """long_waits_share's "waits": a read-only list of the per-wait dicts, made when read.
    columns: the Attributed tables behind it (the report's tables and figures use those)."""

    def __init__(self, tables: list):
        self.tables = tables  # one per snapshot with a list, in order
        self.columns = [a for a in tables if len(a)]
        self._ends = np.cumsum([len(a) for a in self.columns], dtype=np.int64)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        t = int(np.searchsorted(self._ends, i, side="right"))
        return self.columns[t].row(i - (int(self._ends[t - 1]) if t else 0))

    def __iter__(self):
        for a in self.columns:
            for k in range(len(a)):
                yield a.row(k)

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, Rows)) else NotImplemented

    def __repr__(self) -> str:
        return f"Rows({len(self)} long waits)"


class Window:
    """Some attributed long waits of one snapshot (verdict.window_waits: those that spun during
    the repetition) as the verdict reads them: columns, and row(k) for a wait's dict."""

    def __init__(self, att: Attributed, keep, inside):
        self.att, self.keep, self.inside = att, keep, inside  # inside: cycles inside the repetition
        pos = att.pos[keep]
        lw = att.lw
        self.cpu, self.start_tsc, self.wait_cycles = lw.cpu[pos], lw.start[pos], lw.wait[pos]
        self.holder_cpu, self.holder_end_cpu = lw.holder[pos], lw.holder_end[pos]
        self.lock_code, self.class_names = lw.lock_class[pos], lw.class_names
        self.has_holds = lw.holds_at[pos + 1] > lw.holds_at[pos]
        self.holder_by_rule = lw.holder_by_rule[pos]
        self.lhp = att.lhp()[keep]
        self.holder_side = np.array(SIDES, dtype=object)[att.side["holder"][keep]]
        self.ended_inside = att.in_repetition[keep]

    def __len__(self) -> int:
        return int(self.keep.size)

    def __bool__(self) -> bool:
        return len(self) > 0

    def row(self, k: int) -> dict:
        return self.att.row(int(self.keep[k]))

    def __iter__(self):
        return (self.row(k) for k in range(len(self)))

    def where(self, mask):
        """The waits of this window where mask holds."""
        mask = np.asarray(mask, dtype=bool)
        return Window(self.att, self.keep[mask], self.inside[mask])


def window(att: Attributed, start_guest_tsc, end_guest_tsc) -> Window:
    """The waits with cycles inside [start, end) of the repetition (their cycles there, as
    a wait may begin before it or end after it, in .inside); every wait when the span is not known."""
    start, wait = att.start_tsc(), att.wait_cycles()
    if start_guest_tsc is None or end_guest_tsc is None:
        inside = wait.astype(np.float64)
    else:
        inside = np.maximum(0, np.minimum(start + wait, end_guest_tsc) - np.maximum(start, start_guest_tsc)).astype(np.float64)
    keep = np.flatnonzero(inside > 0)
    return Window(att, keep, inside[keep])


# A phase's long waits, attributed (summary.json, the verdict, the figures) ------------------------

def new_share() -> dict:
    """long_waits_share's counts before any wait is added."""
    return {"long_waits": 0, "holder_off": 0, "holder_on": 0, "uncertain": 0, "unknown": 0,
            "holder_blocked": 0, "possibly_preempted": 0,
            # the long waits' off cycles per side (middles of the ranges) and, of them, the time
            # the vCPU thread blocked by itself (under TCG: inside QEMU), not preempted
            "off_cycles": {side: {"off": 0.0, "blocked": 0.0} for side in ("holder", "waiter")},
            "from_guest": 0, "from_timeline": 0, "holder_changed": 0, "handovers_placed": 0,
            "handovers_unplaced": 0, "share": None, "snapshots_without_list": 0, "dropped": 0,
            "outside_repetition": 0,
            "thresholds": dict(lhp.THRESHOLDS), "waits": [],
            "sources": {side: {src: 0 for src in lhp.SOURCES} for side in ("holder", "waiter")},
            "disagreements": {"total": 0, "holder": 0, "waiter": 0, "steal_off_timeline_on": 0,
                              "steal_silent_timeline_off": 0, "sides_compared": 0},
            "agreement": {"guest_vs_timeline": {}, "guest_vs_timeline_any_overlap": {}}}


def blocked_shares(off_cycles: dict | None) -> dict:
    """{side: the share of the long waits' off time its vCPU thread was blocked by itself} from
    long_waits_share's "off_cycles", for the sides that were off at all."""
    return {side: oc["blocked"] / oc["off"] for side, oc in (off_cycles or {}).items() if oc["off"]}


def classified(s, timeline, clock, threshold: int):
    """The long waits (>= threshold) of snapshot s measured and attributed (classify: measure and
    attribute over arrays), once per timeline, clock and threshold: summary.json, the verdict
    and the figures all ask for the same waits, and measuring them against the timeline is most
    of the report's cost at scale. Kept on the snapshot until forget()."""
    memo = s.__dict__.get("_lhp_memo")
    if memo is not None and memo[0] is timeline and memo[1] is clock and memo[2] == threshold:
        return memo[3]
    cmap = lhp.ClockMap(clock) if clock is not None else None
    index = lhp.off_index(timeline, s.phase, s.rep) if timeline is not None and cmap is not None else None
    pre = (lhp.off_index(timeline, s.phase, s.rep, blocked=False)
           if index is not None and lhp.has_blocked_rows(timeline, s.phase, s.rep) else None)
    att = classify(s, index, cmap, threshold, pre)
    s.__dict__["_lhp_memo"] = (timeline, clock, threshold, att)
    return att


def forget(snaps):
    """Drops what classified kept on these snapshots (about 1 KB per wait)."""
    for s in snaps:
        s.__dict__.pop("_lhp_memo", None)


def long_waits_share(snaps, timeline, clock, threshold: int) -> dict:
    """Attribute every long wait (>= threshold) of these snapshots and count holder-off ones.

    Per wait (out["waits"]): the wait, its rep, the timeline measurement (measure) when there is
    a timeline and a clock, and the attribution (attribute: holder_side/waiter_side 'off', 'on',
    'uncertain' or 'unknown', holder_source/waiter_source, lhp), and in_repetition (ended_inside).
    Every listed wait is counted; outside_repetition says how many of them ended outside their
    repetition, where the counters (and the verdict) do not take them. Counts by the holder's side:
    holder_off, holder_on, uncertain, unknown; share = holder off / (holder off + holder on),
    None when neither; sources per side; disagreements between steal time and the timeline.
    """
    out, columns = new_share(), []
    for s in snaps:
        if s.long_waits is None:
            out["snapshots_without_list"] += 1
            continue
        out["dropped"] += int(s.long_waits_dropped)
        columns.append(classified(s, timeline, clock, threshold))
        count(out, columns[-1])  # _count over arrays
    out["waits"] = Rows(columns)
    known = out["holder_off"] + out["holder_on"]
    out["share"] = out["holder_off"] / known if known else None
    out["holder_off_fraction"] = fraction_table(columns)
    return out
