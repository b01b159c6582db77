"""A snapshot's listed long waits as columns (a run may list a million): what the results contract
says of them, read into numpy; what they mean for lock-holder preemption is lhp.py's.

- `LongWaits.from_json(items, where)`: a snapshot's "long_waits" list, checked as the results
  contract says (the first bad wait raises load's ContractError naming it, as before), kept as one
  numpy array per field (no Python object per wait). It reads like the list of dicts it replaces:
  len(), iteration and [i] give the same dict load used to build; `LongWaits.of(x)` accepts
  either (tests and tools build snapshots from dicts).
- `check_long_wait(w, where)`, `check_holds(w, where)`: one entry checked, as a dict.

A wait's lock class is `lock_class`; results written before issue 53 call it `class`, which is
read where `lock_class` is missing (contract.OLD_KEYS). The dicts say `lock_class`.
"""
import numpy as np

from . import contract as c

_INT_FIELDS = ("cpu", "start_tsc", "wait_cycles")
LOCK_CLASS = c.K.lock_class
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
    return {"cpu": c.need_count(w, "cpu", where),
            "lock_class": c.need(w, c.renamed_key(w, LOCK_CLASS), str, where),  # or its old name
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
        except KeyError:
            return False
        if set(map(type, _lock_classes(items))) - {str}:  # None: neither name
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
        lock_codes, lock_names = _codes(_lock_classes(items))
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
        return {"cpu": int(self.cpu[i]), "lock_class": self.class_names[self.lock_class[i]],
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


def _lock_classes(items: list) -> list:
    """Each wait's lock class: lock_class, or where a wait lacks it its old name (results before
    issue 53: class), else None."""
    try:
        return [w[LOCK_CLASS] for w in items]
    except KeyError:
        return [c.get_renamed(w, LOCK_CLASS) for w in items]


def _codes(values: list) -> tuple:
    """(codes array, names list) of a list of strings, names in order of first appearance."""
    names = {}
    codes = np.array([names.setdefault(v, len(names)) for v in values], dtype=np.int32)
    return codes, list(names)
