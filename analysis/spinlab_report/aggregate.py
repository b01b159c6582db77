"""Merge snapshots into per-phase, per-repetition, per-class and per-CPU totals (pure).

Repetitions of a phase are pooled by adding their counters: every repetition ran for the same
duration, so each weighs by how much it measured. Spread between repetitions is shown
separately (rep_hists) rather than averaged away.
"""
from dataclasses import dataclass

import numpy as np

from .buckets import empty, invariant_error, merge


@dataclass
class Totals:
    acquisitions: int
    uncontended: int
    overflow: int
    wait: np.ndarray
    hold: np.ndarray

    @property
    def contended(self) -> int:
        """Contended acquisitions: timed waits plus overflows (waits that could not be timed)."""
        return int(self.wait.sum()) + self.overflow


def totals(stats) -> Totals:
    stats = list(stats)
    return Totals(sum(s.acquisitions for s in stats), sum(s.uncontended for s in stats),
                  sum(s.overflow for s in stats), merge(s.wait for s in stats), merge(s.hold for s in stats))


def phase_totals(snaps) -> Totals:
    return totals(st for s in snaps for st in s.stats)


def rep_hists(snaps, kind: str = "wait") -> list:
    """One merged histogram per repetition (all CPUs, all classes)."""
    return [merge(getattr(st, kind) for st in s.stats) if s.stats else empty() for s in snaps]


def by_key(snaps, key: str) -> dict:
    """Totals per lock class (key='lock_class') or per CPU (key='cpu'), sorted by key."""
    groups: dict = {}
    for s in snaps:
        for st in s.stats:
            groups.setdefault(getattr(st, key), []).append(st)
    return {k: totals(v) for k, v in sorted(groups.items())}


def wait_max(snaps, lock_class: str) -> int | None:
    values = [st.wait_max for s in snaps for st in s.stats if st.lock_class == lock_class and st.wait_max is not None]
    return max(values) if values else None


def lhp_classes(snaps) -> dict:
    """Guest LHP classification of all contended waits, summed: class -> {count, cycles}."""
    out: dict = {}
    for s in snaps:
        for st in s.stats:
            for cls, v in st.lhp.items():
                o = out.setdefault(cls, {"count": 0, "cycles": 0})
                o["count"] += v["count"]
                o["cycles"] += v["cycles"]
    return out


def data_problems(run) -> list:
    """Sentences on what is missing or inconsistent, in the order a reader needs them."""
    out = []
    st = run.status
    if st is not None and st.get("state") == "partial":
        out.append(f"The run is partial: {st.get('reason') or 'no reason given'}.")
    reps = run.meta["repetitions"]
    for phase in run.phases:
        snaps = run.snaps(phase)
        if phase not in run.meta["phases"]:
            out.append(f"Phase {phase} has snapshots but is not listed in meta.json.")
        if not snaps:
            out.append(f"Phase {phase} is missing: no snapshot was recorded for it.")
            continue
        have = [s.rep for s in snaps]
        lost = [r for r in range(1, reps + 1) if r not in have]
        if lost:
            out.append(f"Phase {phase}: repetition(s) {', '.join(map(str, lost))} of {reps} missing.")
        for s in snaps:
            if not s.stats:
                out.append(f"{s.name}: holds no lock classes (no CPU reported counters).")
            for cs in s.stats:
                err = invariant_error(cs.acquisitions, cs.uncontended, cs.overflow, cs.wait)
                if err:
                    out.append(f"{s.name}: CPU {cs.cpu} class {cs.lock_class}: invariant broken: {err}.")
        t = phase_totals(snaps)
        if t.acquisitions == 0:
            out.append(f"Phase {phase}: no lock acquisitions were counted.")
        elif int(t.wait.sum()) == 0:
            out.append(f"Phase {phase}: the wait histogram is empty (no timed contended waits), "
                       "so it has no CDF, histogram or percentiles.")
        if t.overflow:
            out.append(f"Phase {phase}: {t.overflow} contended wait(s) could not be timed (overflow); "
                       "they are counted in the table but not in CDFs or percentiles.")
    return out
