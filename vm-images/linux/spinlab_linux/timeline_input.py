"""The host's view of each vCPU for attribution: when it was surely off, when surely on (pure).

A `HostTimeline` holds, per vCPU index, two disjoint sets of host TSC intervals:

- off: the vCPU ran no guest code (a timeline row `off` or `frozen`, or a freeze's effective
  window [stopped, resumed) from spinlab-load freeze's record);
- on: the timeline covers the time and the vCPU thread was on a CPU (a row `on`), less any off.

Everything else is not covered: a timeline row `unknown` (a switch neither the trace nor perf
recorded), time outside the timeline's window, gaps between repetitions, a vCPU with no rows.
attribution.py counts uncovered time as on for the least and as off for the most off share, and
classes a wait `unknown` where that alone decides it.

Readers (the real formats, hypervisor-hooks/README.md "Output formats"):

- `parse_timeline_csv` / `read_timeline_csv`: timeline.csv, written by
  hypervisor-hooks/timeline/run_intervals.cc:
  `vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,start_ns,end_ns,reason,cpu,preemptor,...`
  (only vcpu, tid, state, start_host_tsc, end_host_tsc are needed; phase and rep to filter;
  preemptor_comm may be RFC 4180-quoted). state `on`, `off`, `frozen` or `unknown`.
- `parse_freeze_record` / `read_freeze_record`: spinlab-load freeze's record,
  hypervisor-hooks/freezes/freeze_record.cc: `seq,tid,vcpu,...,stopped_tsc,resumed_tsc,
  effective,...`. As its own reader (`read_frozen_spans`): `ok` rows give [stopped, resumed),
  `not-resumed` rows [stopped, END_OF_TIME) (when stopped is known), `never-stopped` and
  `no-events` rows nothing; any other status is an error.

A row's vCPU is its `vcpu` column; where that is -1 (not known to the writer) the optional
`vcpu_threads` ({vcpu: tid}, as boot.run_guest records them) places it by its tid, and a row
whose tid that map gives another vCPU than its column is an error. Bad input raises ValueError
naming the file and line.

Timeline rows of one vCPU that say on and off for the same time are an error. A freeze window
that overlaps an `on` row is not: inside an effective window the thread may be on CPU only on
the kernel's path into the freezer, running no guest code (timeline.h's mark_frozen does the
same), so the freeze wins there.
"""
import csv
import io
from bisect import bisect_left, bisect_right
from numbers import Integral
from pathlib import Path

END_OF_TIME = 1 << 64  # beyond every host TSC value (u64): a freeze never seen resumed ends here

TIMELINE_STATES = ("on", "off", "frozen", "unknown")
OFF_STATES = ("off", "frozen")


def _tsc(value, what):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{what} is {value!r}, not an integer host TSC")
    if value < 0:
        raise ValueError(f"{what} is {value}, a negative host TSC")
    return int(value)


class IntervalSet:
    """A union of half-open intervals [start, end) of integers, kept sorted and disjoint
    (touching intervals merged, empty ones dropped), with the measure before each start."""

    __slots__ = ("starts", "ends", "_before")

    def __init__(self, intervals=(), what="interval"):
        pairs = []
        for k, iv in enumerate(intervals):
            try:
                s, e = iv
            except (TypeError, ValueError):
                raise ValueError(f"{what} {k} is {iv!r}, not (start, end)") from None
            s, e = _tsc(s, f"{what} {k}'s start"), _tsc(e, f"{what} {k}'s end")
            if e < s:
                raise ValueError(f"{what} {k} ends at {e}, before its start {s}")
            if e > s:
                pairs.append((s, e))
        pairs.sort()
        starts, ends = [], []
        for s, e in pairs:
            if ends and s <= ends[-1]:
                ends[-1] = max(ends[-1], e)
            else:
                starts.append(s)
                ends.append(e)
        self._set(starts, ends)

    def _set(self, starts, ends):
        self.starts, self.ends = starts, ends
        before, total = [], 0
        for s, e in zip(starts, ends):
            before.append(total)
            total += e - s
        self._before = before

    @classmethod
    def _raw(cls, starts, ends):
        out = cls.__new__(cls)
        out._set(starts, ends)
        return out

    def __iter__(self):
        return iter(zip(self.starts, self.ends))

    def __len__(self):
        return len(self.starts)

    def __eq__(self, other):
        return isinstance(other, IntervalSet) and self.starts == other.starts and self.ends == other.ends

    def __repr__(self):
        return f"IntervalSet({list(self)})"

    def cumulative(self, t) -> int:
        """The measure of the set before t: |S n (-inf, t)|."""
        i = bisect_right(self.starts, t) - 1
        if i < 0:
            return 0
        return self._before[i] + min(t, self.ends[i]) - self.starts[i]

    def measure(self, lo, hi) -> int:
        """|S n [lo, hi)| (0 when hi <= lo)."""
        return self.cumulative(hi) - self.cumulative(lo) if hi > lo else 0

    def breakpoints(self, lo, hi) -> list:
        """The set's interval ends strictly inside (lo, hi), sorted: where its indicator changes."""
        out = []
        i = bisect_right(self.ends, lo)           # intervals ending after lo
        j = bisect_left(self.starts, hi)          # intervals starting before hi
        for s, e in zip(self.starts[i:j], self.ends[i:j]):
            if lo < s < hi:
                out.append(s)
            if lo < e < hi:
                out.append(e)
        return out

    def union(self, other: "IntervalSet") -> "IntervalSet":
        return IntervalSet(list(self) + list(other))

    def subtract(self, other: "IntervalSet") -> "IntervalSet":
        starts, ends = [], []
        for s, e in self:
            cur = s
            i = bisect_right(other.ends, s)
            while i < len(other.starts) and other.starts[i] < e:
                if other.starts[i] > cur:
                    starts.append(cur)
                    ends.append(other.starts[i])
                cur = max(cur, other.ends[i])
                i += 1
            if cur < e:
                starts.append(cur)
                ends.append(e)
        return IntervalSet._raw(starts, ends)

    def intersect(self, other: "IntervalSet") -> "IntervalSet":
        starts, ends = [], []
        i = j = 0
        while i < len(self.starts) and j < len(other.starts):
            s, e = max(self.starts[i], other.starts[j]), min(self.ends[i], other.ends[j])
            if s < e:
                starts.append(s)
                ends.append(e)
            if self.ends[i] < other.ends[j]:
                i += 1
            else:
                j += 1
        return IntervalSet._raw(starts, ends)


EMPTY = IntervalSet()


def freeze_set(windows, what="freeze window") -> IntervalSet:
    """Freeze windows [(start, end)] as an IntervalSet; an end of None (a freeze never seen
    resumed) becomes END_OF_TIME."""
    pairs = []
    for k, w in enumerate(windows):
        try:
            s, e = w
        except (TypeError, ValueError):
            raise ValueError(f"{what} {k} is {w!r}, not (start, end)") from None
        pairs.append((s, END_OF_TIME if e is None else e))
    return IntervalSet(pairs, what)


class HostTimeline:
    """Per vCPU: `off_set(v)` (surely off), `on_set(v)` (covered and surely on); the rest is
    not covered. Build from off intervals and the covered spans:
        HostTimeline(off={vcpu: [(start, end), ...]}, covered={vcpu: [(start, end), ...]})
    host TSC, half-open. Off time counts as covered (it is known); on = covered - off."""

    def __init__(self, off=None, covered=None):
        off, covered = dict(off or {}), dict(covered or {})
        self._off, self._on = {}, {}
        for v in set(off) | set(covered):
            if isinstance(v, bool) or not isinstance(v, Integral) or v < 0:
                raise ValueError(f"vCPU index {v!r} is not a non-negative integer")
            o, c = off.get(v, ()), covered.get(v, ())
            o = o if isinstance(o, IntervalSet) else IntervalSet(o, f"vCPU {v}'s off interval")
            c = c if isinstance(c, IntervalSet) else IntervalSet(c, f"vCPU {v}'s covered span")
            self._off[int(v)] = o
            self._on[int(v)] = c.subtract(o)

    @property
    def vcpus(self) -> list:
        return sorted(self._off)

    def off_set(self, vcpu: int) -> IntervalSet:
        return self._off.get(vcpu, EMPTY)

    def on_set(self, vcpu: int) -> IntervalSet:
        return self._on.get(vcpu, EMPTY)

    def covered_set(self, vcpu: int) -> IntervalSet:
        return self.off_set(vcpu).union(self.on_set(vcpu))

    def with_freezes(self, frozen) -> "HostTimeline":
        """This timeline with freeze windows ({vcpu: [(start, end)]}, host TSC) added as off
        time: off where frozen, whatever the timeline said (see the module's docstring)."""
        off, covered = {}, {}
        for v in set(self._off) | set(frozen):
            fz = freeze_set(frozen.get(v, ()), f"vCPU {v}'s freeze window")
            off[v] = self.off_set(v).union(fz)
            covered[v] = self.covered_set(v).union(fz)
        return HostTimeline(off, covered)


def _rows(text, source, required):
    reader = csv.reader(io.StringIO(text))
    header = None
    for n, row in enumerate(reader, start=1):
        if not row or row == [""]:
            continue
        if header is None:
            header = row
            missing = [c for c in required if c not in header]
            if missing:
                raise ValueError(f"{source}: the header has no column {', '.join(missing)} "
                                 f"(it reads {','.join(header)})")
            continue
        if len(row) != len(header):
            raise ValueError(f"{source}, line {n}: {len(row)} fields, the header has {len(header)}")
        yield n, dict(zip(header, row))
    if header is None:
        raise ValueError(f"{source} is empty: no header line")


def _number(row, col, where, signed=False):
    v = row[col]
    body = v[1:] if signed and v.startswith("-") else v
    if not body.isdigit():
        raise ValueError(f"{where}: {col} '{v}' is not a{' ' if signed else ' non-negative '}integer")
    return int(v)


def _place(vcpu, tid, where, vcpu_threads):
    if vcpu_threads is not None:
        by_tid = {int(t): int(v) for v, t in vcpu_threads.items()}
        if tid in by_tid:
            if vcpu >= 0 and vcpu != by_tid[tid]:
                raise ValueError(f"{where}: vcpu {vcpu}, but vcpu_threads gives tid {tid} vCPU {by_tid[tid]}")
            return by_tid[tid]
    if vcpu < 0:
        raise ValueError(f"{where}: vcpu {vcpu} (the writer did not know the thread's vCPU) and "
                         f"no vcpu_threads entry for tid {tid}, so its time cannot be placed")
    return vcpu


def parse_timeline_csv(text: str, *, phase=None, rep=None, vcpu_threads=None,
                       source="timeline.csv") -> HostTimeline:
    """A HostTimeline from timeline.csv's text; only the rows of `phase` and/or `rep` when given."""
    on, off = {}, {}
    for n, row in _rows(text, source, ("vcpu", "tid", "state", "start_host_tsc", "end_host_tsc")):
        where = f"{source}, line {n}"
        if phase is not None and row.get("phase") != phase:
            continue
        if rep is not None and ("rep" not in row or _number(row, "rep", where) != rep):
            continue
        state = row["state"]
        if state not in TIMELINE_STATES:
            raise ValueError(f"{where}: state '{state}' is none of {', '.join(TIMELINE_STATES)}")
        start, end = _number(row, "start_host_tsc", where), _number(row, "end_host_tsc", where)
        if end < start:
            raise ValueError(f"{where}: end_host_tsc {end} is before start_host_tsc {start}")
        v = _place(_number(row, "vcpu", where, signed=True), _number(row, "tid", where), where, vcpu_threads)
        if state == "on":
            on.setdefault(v, []).append((start, end, n))
        elif state in OFF_STATES:
            off.setdefault(v, []).append((start, end, n))
    for v in set(on) & set(off):
        clash = IntervalSet([(s, e) for s, e, _ in on[v]]).intersect(IntervalSet([(s, e) for s, e, _ in off[v]]))
        if len(clash):
            s, e = next(iter(clash))
            lines = sorted(n for rows in (on[v], off[v]) for a, b, n in rows if a < e and s < b)
            raise ValueError(f"{source}: vCPU {v} is both on and off in [{s}, {e}) "
                             f"(lines {', '.join(map(str, lines))})")
    offs = {v: [(s, e) for s, e, _ in rows] for v, rows in off.items()}
    covered = {v: [(s, e) for s, e, _ in on.get(v, []) + off.get(v, [])] for v in set(on) | set(off)}
    return HostTimeline(offs, covered)


def read_timeline_csv(path, **kw) -> HostTimeline:
    p = Path(path)
    return parse_timeline_csv(p.read_text(), source=str(p), **kw)


def parse_freeze_record(text: str, *, vcpu_threads=None, source="freeze record") -> dict:
    """{vcpu: [(stopped, resumed)]}: the effective freeze windows of spinlab-load freeze's record."""
    out = {}
    for n, row in _rows(text, source, ("tid", "vcpu", "stopped_tsc", "resumed_tsc", "effective")):
        where = f"{source}, line {n}"
        status = row["effective"]
        stopped, resumed = _number(row, "stopped_tsc", where), _number(row, "resumed_tsc", where)
        if status == "ok":
            if resumed < stopped:
                raise ValueError(f"{where}: resumed_tsc {resumed} is before stopped_tsc {stopped}")
            window = (stopped, resumed)
        elif status == "not-resumed":
            if not stopped:
                continue
            window = (stopped, END_OF_TIME)
        elif status in ("never-stopped", "no-events"):
            continue
        else:
            raise ValueError(f"{where}: unknown effective status '{status}'")
        v = _place(_number(row, "vcpu", where, signed=True), _number(row, "tid", where), where, vcpu_threads)
        out.setdefault(v, []).append(window)
    return out


def read_freeze_record(path, **kw) -> dict:
    p = Path(path)
    return parse_freeze_record(p.read_text(), source=str(p), **kw)


def timeline_phase_windows(text: str, source="timeline.csv") -> dict:
    """{(phase, rep): (first start, last end)} over timeline.csv's rows with a phase: each
    phase repetition's host TSC window, for attribution's per-phase summary."""
    out = {}
    for n, row in _rows(text, source, ("phase", "rep", "start_host_tsc", "end_host_tsc")):
        if not row["phase"]:
            continue
        where = f"{source}, line {n}"
        key = (row["phase"], _number(row, "rep", where))
        s, e = _number(row, "start_host_tsc", where), _number(row, "end_host_tsc", where)
        a, b = out.get(key, (s, e))
        out[key] = (min(a, s), max(b, e))
    return out
