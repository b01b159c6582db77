"""The counts of a phase's attributed long waits (pure): long_waits_share's dict, which is
summary.json's per-phase "lhp" and what Attribution.phases holds (attribution.py makes them, once
per run, from lhp.classify's tables).

- `counts(snaps, tables)`: one phase's dict from the lhp.Attributed of its snapshots with a list;
  `new_share()` the dict before any wait is added, `count(out, att)` adds one table's waits.
- `fraction_table(atts)`: holder-off fraction against wait length, per wait-length octave.
- Counts over arrays, dict keys in the order of first appearance (as the per-wait reference,
  tests/lhp_reference.py, inserts them).
- `Rows`: the counts' "waits", the per-wait dicts (`lhp.Attributed.row`) made only when read
  (tools, tests); the report's tables and figures read the columns (`Rows.columns`).
- `blocked_shares(off_cycles)`: of the counts' off cycles, the share a vCPU thread blocked by itself;
  `halted_shares(off_cycles)` the share its guest had halted (where the guest records halts).
"""
import numpy as np

from . import lhp


def _holds_counts(att: lhp.Attributed):
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


def count(out: dict, att: lhp.Attributed):
    """Adds the waits of att to long_waits_share's counts in out."""
    n = len(att)
    out["long_waits"] += n
    hs = att.side["holder"]
    for code, key in ((lhp.OFF, "holder_off"), (lhp.ON, "holder_on"), (lhp.UNCERTAIN_SIDE, "uncertain"), (lhp.UNKNOWN, "unknown"),
                      (lhp.BLOCKED, "holder_blocked"), (lhp.POSSIBLY_OFF, "possibly_preempted")):
        out[key] += int(np.count_nonzero(hs == code))
    for side, lo, hi, plo, phi, alo, ahi in (("holder", att.h_lo, att.h_hi, att.hp_lo, att.hp_hi, att.ha_lo, att.ha_hi),
                                             ("waiter", att.w_lo, att.w_hi, att.wp_lo, att.wp_hi, att.wa_lo, att.wa_hi)):
        ok = ~np.isnan(lo) & ~np.isnan(plo)  # middles of the ranges, as fraction_table
        if att.halts_recorded:
            ok &= ~np.isnan(alo)
        off, pre = ((lo[ok] + hi[ok]) / 2).sum(), ((plo[ok] + phi[ok]) / 2).sum()
        oc = out["off_cycles"][side]
        oc["blocked"] += float(max(0.0, off - pre))
        if att.halts_recorded:  # off without the halted time above; with it here
            every = ((alo[ok] + ahi[ok]) / 2).sum()
            oc["halted"] = (oc["halted"] or 0.0) + float(max(0.0, every - off))
            off = max(off, every)
        oc["off"] += float(off)
    src = att.source["holder"]
    out["from_guest"] += int(np.count_nonzero(src == 1))
    out["from_timeline"] += int(np.count_nonzero(src == 0))
    changed, placed, unplaced = _holds_counts(att)
    out["holder_changed"] += int(np.count_nonzero(changed))
    out["handovers_placed"] += int(placed.sum())
    out["handovers_unplaced"] += int(unplaced.sum())
    out["outside_repetition"] += int(np.count_nonzero(~att.in_repetition))
    d, steal = out["disagreements"], att.steal
    for i, side in enumerate(("holder", "waiter")):
        s = att.source[side]
        for code, name in enumerate(lhp.SOURCES):
            out["sources"][side][name] += int(np.count_nonzero(s == code))
        d["sides_compared"] += int(np.count_nonzero((s == 0) & (steal[i] >= 0) & (att.side[side] <= lhp.ON)))
        dis = att.disagrees[side]
        d["total"] += int(np.count_nonzero(dis))
        d[side] += int(np.count_nonzero(dis))
        d["steal_off_timeline_on"] += int(np.count_nonzero(dis & (steal[i] == 1)))
        d["steal_silent_timeline_off"] += int(np.count_nonzero(dis & (steal[i] != 1)))
    if att.measured and n:
        _agreement(out["agreement"], att, steal)


def _agreement(agreement: dict, att: lhp.Attributed, steal):
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
            t = str(lhp.CLASS_NAMES[p % 32])
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


def new_share() -> dict:
    """long_waits_share's counts before any wait is added."""
    return {"long_waits": 0, "holder_off": 0, "holder_on": 0, "uncertain": 0, "unknown": 0,
            "holder_blocked": 0, "possibly_preempted": 0,
            # the long waits' off cycles per side (middles of the ranges) and, of them, the time
            # the vCPU thread blocked by itself (under TCG: inside QEMU) while its guest had work,
            # and the time its guest had halted (None: the guest records no halts, so a halt is
            # counted as blocked); the rest was preempted or frozen
            "off_cycles": {side: {"off": 0.0, "blocked": 0.0, "halted": None} for side in ("holder", "waiter")},
            "from_guest": 0, "from_timeline": 0, "holder_changed": 0, "handovers_placed": 0,
            "handovers_unplaced": 0, "share": None, "snapshots_without_list": 0, "dropped": 0,
            "outside_repetition": 0,
            "thresholds": dict(lhp.THRESHOLDS), "waits": [],
            "sources": {side: {src: 0 for src in lhp.SOURCES} for side in ("holder", "waiter")},
            "disagreements": {"total": 0, "holder": 0, "waiter": 0, "steal_off_timeline_on": 0,
                              "steal_silent_timeline_off": 0, "sides_compared": 0},
            "agreement": {"guest_vs_timeline": {}, "guest_vs_timeline_any_overlap": {}}}


def blocked_shares(off_cycles: dict | None) -> dict:
    """{side: the share of the long waits' off time its vCPU thread was blocked by itself while its
    guest had work} from long_waits_share's "off_cycles", for the sides that were off at all."""
    return {side: oc["blocked"] / oc["off"] for side, oc in (off_cycles or {}).items() if oc["off"]}


def halted_shares(off_cycles: dict | None) -> dict:
    """{side: the share of the long waits' off time its guest had halted}, for the sides that were
    off at all and whose guest records its halts."""
    return {side: oc["halted"] / oc["off"] for side, oc in (off_cycles or {}).items()
            if oc["off"] and oc.get("halted") is not None}


def counts(snaps, tables: list) -> dict:
    """long_waits_share's dict of one phase's snapshots, from the Attributed of those with a list
    (tables, in order)."""
    out = new_share()
    for s in snaps:
        if s.long_waits is None:
            out["snapshots_without_list"] += 1
        else:
            out["dropped"] += int(s.long_waits_dropped)
    for t in tables:
        count(out, t)
    out["waits"] = Rows(tables)
    known = out["holder_off"] + out["holder_on"]
    out["share"] = out["holder_off"] / known if known else None
    out["holder_off_fraction"] = fraction_table(tables)
    return out
