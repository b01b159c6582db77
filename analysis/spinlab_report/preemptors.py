"""Who took the holder's CPU: the spin behind a preempted holder, shared out by preemptor class.

Each off-CPU row of timeline.csv names the task its switch-out gave the CPU to and its class
(column `preemptor`, one of names.PREEMPTOR_CLASS: the ABI's table spinlab/preemptor.h; written
by spinlab-load timeline). For every long wait whose holder side the timeline decided `off`
(lhp's attribution), the holder vCPU's off and frozen rows inside the wait (on host TSC) are
summed per class: a frozen row is `freeze`, an off row its column's class, and an off row without
the column (a timeline.csv written before it) `unknown`. The share of a class is its cycles over
all those cycles: how much of the spin behind a preempted holder each preemptor caused. The
class `blocked` is no preemptor: the holder's vCPU thread went to sleep by itself (under TCG
inside QEMU, its global lock or its clock's lock, or halted), and the verdict says so apart.

Exact where the timeline is complete (each off row then names its preemptor); the rest is
`unknown`. The holder is taken piece by piece as the attribution measured it (its holder_pieces: a
hand-over placed splits the wait); a wait whose holder changed at an unknown moment is counted
in `waits_not_placed` and left out.
"""
import numpy as np

from .contract import OFF_STATES
from .lhp import OFF
from .names import PREEMPTOR_CLASS

CLASSES = PREEMPTOR_CLASS.names
UNKNOWN = PREEMPTOR_CLASS.kPreemptorUnknown
FREEZE = PREEMPTOR_CLASS.kPreemptorFreeze
BLOCKED = PREEMPTOR_CLASS.kPreemptorBlocked
COLUMN = "preemptor"


def has_column(timeline) -> bool:
    return timeline is not None and COLUMN in timeline.columns


def row_classes(rows) -> np.ndarray:
    """The preemptor class of each row: freeze for frozen rows, the column's class for off rows
    (unknown where the column is missing or empty), None for the others."""
    state = rows["state"].to_numpy()
    if COLUMN in rows.columns:
        col = rows[COLUMN].astype(object).to_numpy()
        given = np.array([c if isinstance(c, str) and c in CLASSES else UNKNOWN for c in col], dtype=object)
    else:
        given = np.full(len(rows), UNKNOWN, dtype=object)
    return np.where(state == "frozen", FREEZE, np.where(state == "off", given, None))


def _by_vcpu(rows) -> dict:
    """Per vCPU: its off and frozen rows (starts, ends, classes), sorted by start."""
    rows = rows[rows["state"].isin(OFF_STATES)]
    out = {}
    if rows.empty:
        return out
    cls = row_classes(rows)
    a = rows["start_host_tsc"].to_numpy(dtype=np.float64)
    b = rows["end_host_tsc"].to_numpy(dtype=np.float64)
    v = rows["vcpu"].to_numpy(dtype=np.int64)
    for vcpu in np.unique(v):
        k = np.flatnonzero(v == vcpu)
        k = k[np.argsort(a[k], kind="stable")]
        out[int(vcpu)] = (a[k], b[k], cls[k])
    return out


def holder_off_by_class(att, rows) -> tuple:
    """({class: cycles}, waits counted, waits not placed) over the holder-off long waits of one
    snapshot's attribution (lhp.Attributed) and its repetition's timeline rows."""
    cycles = dict.fromkeys(CLASSES, 0.0)
    if not att.measured or not len(att):
        return cycles, 0, 0
    index = _by_vcpu(rows)
    # The holder's pieces of each wait, as the attribution measured them (one per holder, a
    # hand-over placed); a hand-over at an unknown moment has no pieces: not placed.
    k, vcpus, lo, hi = att.holder_pieces
    off = (att.side["holder"] == OFF) & (att.source["holder"] == 0)
    placed = np.zeros(len(att), dtype=bool)
    placed[k] = True
    counted, not_placed = int((off & placed).sum()), int((off & ~placed).sum())
    for j, vcpu, a, b in zip(k.tolist(), vcpus.tolist(), lo.tolist(), hi.tolist()):
        if not off[j] or vcpu not in index:
            continue
        s, e, c = index[vcpu]
        first = int(np.searchsorted(e, a, side="right"))
        last = int(np.searchsorted(s, b, side="left"))
        for i in range(first, last):
            overlap = min(e[i], b) - max(s[i], a)
            if overlap > 0:
                cycles[c[i]] += overlap
    return cycles, counted, not_placed


def phase_preemptors(att, snaps, timeline) -> dict | None:
    """summary.json's `preemptors` of one phase's snapshots, from the run's attribution att
    (attribution.Attribution): {column, waits, waits_not_placed, off_cycles {class: cycles},
    share {class: share or None}}; None without a timeline or a clock (nothing was measured)."""
    if att.rows is None:
        return None
    total = dict.fromkeys(CLASSES, 0.0)
    counted = not_placed = 0
    for s in snaps:
        table, rows = att.tables.get((s.phase, s.rep)), att.rows.get((s.phase, s.rep))
        if table is None:
            continue
        got, n, m = holder_off_by_class(table, rows if rows is not None else timeline.iloc[0:0])
        counted, not_placed = counted + n, not_placed + m
        for k, v in got.items():
            total[k] += v
    whole = sum(total.values())
    return {"column": has_column(timeline), "waits": counted, "waits_not_placed": not_placed,
            "off_cycles": {k: int(round(v)) for k, v in total.items()},
            "share": {k: (round(v / whole, 6) if whole else None) for k, v in total.items()}}


def sentence(p: dict | None) -> str | None:
    """The verdict's line: which preemptors caused the spin behind a preempted holder."""
    if not p or not p["waits"]:
        return None
    named = sorted(((v, k) for k, v in p["share"].items() if v and k != BLOCKED), reverse=True)
    blocked = p["share"].get(BLOCKED) or 0
    if not named and not blocked:
        return None
    parts = ", ".join(f"{k} {100 * v:.0f} %" for v, k in named)
    tail = "" if p["column"] else " (timeline.csv has no preemptor column, written before it: off time not frozen is unknown)"
    took = (f"the holder's CPU went to: {parts} of its off time" if named else "nothing took the holder's CPU")
    text = f"{took} in {p['waits']} holder-off long wait(s)"
    if blocked:
        text += (f"; for {100 * blocked:.0f} % of that off time the holder's vCPU thread blocked by "
                 f"itself, preempted by nothing (under TCG inside QEMU, or halted)")
    return text + tail
