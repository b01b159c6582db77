"""Merge snapshots into per-phase, per-repetition, per-class and per-CPU totals (pure).

Repetitions of a phase are pooled by adding their counters: every repetition ran for the same
duration, so each weighs by how much it measured. Spread between repetitions is shown
separately (rep_hists) rather than averaged away.

The counters' invariant (invariant_state, the one rule the report's problems and lab 1's checker
apply): uncontended + waits + overflow = acquisitions, but for the records in flight when the
runner read the counters while the workload ran (spinlab/perfdata.h: readers see the fields of a
record in flight skewed; a record counts its acquisition before its wait). So per CPU and class,
acquisitions may run ahead of the sum by at most the threads that can be half-way through a
record there: lockbench's threads per CPU for its (ring-3) classes, one for a kernel class
(ring 0, preemption off; a frozen vCPU can stop mid-record).

A class can also fall behind by as many: the runner resets the counters after the warm-up
while the workload runs (window.cc), and the reset (an IPI, run on the owning CPU with
interrupts off: kern/sysinfo_glue.cc) can land between a record's two increments: a ring-3
lockbench thread's, or a kernel spin_lock's (it runs with preemption off but interrupts on;
only spin_lock_irqsave records with them off). The acquisition is zeroed, its wait or
uncontended count lands after the reset: one record counted half, for the rest of the
repetition (seen once in 11 reduced lab-2 runs, issue 42). Any other difference is broken.
"""
import re
from dataclasses import dataclass

import numpy as np

from .buckets import empty, invariant_error, merge
from .cdf import percentile
from .contract import CONTENDED_ONLY


WORKLOAD_CLASS_PREFIXES = ("user", "lockbench")  # lockbench's ring-3 lock classes (user0..; the test data's lockbench.N)


def threads_per_cpu(meta) -> int:
    """lockbench's --threads-per-cpu in the run's workload (meta: the run's reader.Meta), 1 when
    not given."""
    m = re.search(r"--threads-per-cpu[ =](\d+)", str(meta.workload or ""))
    return max(1, int(m.group(1))) if m else 1


def in_flight_max(lock_class: str, threads: int) -> int:
    """How many records of this class can be half done on one CPU: lockbench's threads per CPU
    for its classes, one for a kernel class."""
    return threads if lock_class.startswith(WORKLOAD_CLASS_PREFIXES) else 1


def in_flight_range(lock_class: str, threads: int) -> tuple[int, int]:
    """(least, most) acquisitions - (uncontended + waits + overflow) that records in flight can
    explain: up to in_flight_max ahead (a read mid-record) or as many behind (a reset
    mid-record, the module's docstring)."""
    most = in_flight_max(lock_class, threads)
    return -most, most


def invariant_state(stat, threads: int) -> tuple[str, str | None]:
    """("ok", None), ("in_flight", sentence) when acquisitions differ from uncontended + waits +
    overflow by no more than records in flight explain (in_flight_range), else ("broken",
    sentence with the numbers). stat: a load.ClassStat; threads: threads_per_cpu(run.meta)."""
    err = invariant_error(stat.acquisitions, stat.uncontended, stat.overflow, stat.wait)
    if err is None:
        return "ok", None
    ahead = stat.acquisitions - (stat.uncontended + int(np.asarray(stat.wait).sum()) + stat.overflow)
    least, most = in_flight_range(stat.lock_class, threads)
    return ("in_flight" if least <= ahead <= most else "broken"), err


@dataclass
class Totals:
    acquisitions: int
    uncontended: int
    overflow: int
    wait: np.ndarray
    hold: np.ndarray
    # Only contended acquisitions were counted (a Linux guest's slow-path probe): `uncontended`
    # is 0 because first-try wins were not seen, and shares are of contended acquisitions.
    contended_only: bool = False

    @property
    def contended(self) -> int:
        """Contended acquisitions: timed waits plus overflows (waits that could not be timed)."""
        return int(self.wait.sum()) + self.overflow


def totals(stats) -> Totals:
    stats = list(stats)
    return Totals(sum(s.acquisitions for s in stats), sum(s.uncontended for s in stats),
                  sum(s.overflow for s in stats), merge(s.wait for s in stats), merge(s.hold for s in stats))


def phase_totals(snaps) -> Totals:
    snaps = list(snaps)
    t = totals(st for s in snaps for st in s.stats)
    t.contended_only = any(s.acquisitions_counted == CONTENDED_ONLY for s in snaps)
    return t


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


def class_rows(snaps) -> list:
    """One dict per lock class (acquisitions, contended and its share, p50 and p99 of the timed
    waits, the largest wait the kernel saw), longest p99 first; classes without timed waits last."""
    per_class = by_key(snaps, "lock_class")
    longest = {cls: wait_max(snaps, cls) for cls in per_class}
    rows = [{"class": cls, "acquisitions": t.acquisitions, "contended": t.contended,
             "contended_share": t.contended / t.acquisitions if t.acquisitions else None,
             "p50": percentile(t.wait, 50), "p99": percentile(t.wait, 99), "max": longest[cls]}
            for cls, t in per_class.items()]
    return sorted(rows, key=lambda r: (r["p99"] is None, -(r["p99"] or 0), r["class"]))


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


@dataclass(frozen=True)
class Counters:
    """A run's counters merged per phase and checked, once (counters): what the log2 tables,
    summary.json and the figures read."""
    totals: dict  # phase -> Totals, None for a phase without snapshots
    repetitions: dict  # phase -> its number of repetitions
    classes: dict  # phase -> its lock classes (class_rows; [] for a phase without snapshots)
    problems: list  # what is missing or inconsistent, in the order a reader needs them


def counters(run) -> Counters:
    """The run's counters merged per phase (phase_totals), and sentences on what is missing or
    inconsistent in them, found as each phase is merged."""
    out, threads = [], threads_per_cpu(run.meta)
    st = run.status
    if st is not None and st.get("state") == "partial":
        out.append(f"The run is partial: {st.get('reason') or 'no reason given'}.")
    reps, totals = run.meta.repetitions, {}
    for phase in run.phases:
        snaps = run.snaps(phase)
        totals[phase] = None
        if phase not in run.meta.phases:
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
                state, err = invariant_state(cs, threads)
                if state == "broken":
                    out.append(f"{s.name}: CPU {cs.cpu} class {cs.lock_class}: invariant broken: {err}.")
        t = totals[phase] = phase_totals(snaps)
        if t.acquisitions == 0:
            out.append(f"Phase {phase}: no lock acquisitions were counted.")
        elif int(t.wait.sum()) == 0:
            out.append(f"Phase {phase}: the wait histogram is empty (no timed contended waits), "
                       "so it has no CDF, histogram or percentiles.")
        if t.overflow:
            out.append(f"Phase {phase}: {t.overflow} contended wait(s) could not be timed (overflow); "
                       "they are counted in the table but not in CDFs or percentiles.")
    return Counters(totals, {p: len(run.snaps(p)) for p in run.phases},
                    {p: class_rows(run.snaps(p)) for p in run.phases}, out)
