"""Attribute: every long wait of a run measured and classed once (the rules: lhp.py) and counted
per phase (lhp_share.py), the step that summary.json, the verdict, the figures and the API read.

    run = reader.load_run(path)                         # load
    counters = aggregate.counters(run)                  # the counters merged per phase
    att = attribution.attribute_run(run, long_wait_threshold)     # attribute
    summ = summary.summarise(run, att, counters, opts)  # summarise
    summ["verdict"] = verdict.judge(run, att, summ)
    ... the figures and report_doc read them            # render

`attribute_run` splits the host timeline by repetition once, classes each snapshot's listed waits
once (lhp.classify_all) and counts them per phase (lhp_share.counts); the `Attribution` it
returns is read, never recomputed, and nothing is kept anywhere else: no cache, no memo on the
run's objects.

- `Attribution`: per phase the counts (`long_waits_share`'s dict) and its waits; per snapshot its
  `lhp.Attributed` table; the timeline rows each repetition was measured against.
- `long_waits_share(snaps, timeline, clock, long_wait_threshold, halts=None)`: the same counts of some snapshots alone,
  for a tool or a test (each call measures afresh); the package's public name for it.
"""
from dataclasses import dataclass

from . import lhp, lhp_share


def long_waits_share(snaps, timeline, clock, long_wait_threshold: int, halts=None) -> dict:
    """Attribute every long wait (>= long_wait_threshold) of these snapshots and count holder-off ones: what
    Attribution.phases holds for a phase, for a tool or a test with some snapshots alone.

    Per wait (out["waits"]): the wait, its rep, the timeline measurement when there is a timeline
    and a clock, and the attribution (holder_side/waiter_side 'off', 'on', 'uncertain' or
    'unknown', holder_source/waiter_source, cause), and in_repetition (ended inside it).
    Every listed wait is counted; outside_repetition says how many of them ended outside their
    repetition, where the counters (and the verdict) do not take them. Counts by the holder's side:
    holder_off, holder_on, uncertain, unknown; share = holder off / (holder off + holder on),
    None when neither; sources per side; disagreements between steal time and the timeline.
    halts: the run's halts.csv (reader.read_halts; None: the guest records none).
    """
    return lhp_share.counts(snaps, lhp.classify_all(snaps, timeline, clock, long_wait_threshold, halts)[1])


@dataclass(frozen=True)
class Attribution:
    """Every long wait (>= long_wait_threshold) of one run, attributed once (attribute_run). Read as
    it is: phases[phase] (long_waits_share's dict: the counts, and "waits", lhp_share.Rows),
    tables[(phase, rep)] (a snapshot's lhp.Attributed; absent without a list of long waits) and
    rows[(phase, rep)] (the timeline rows its waits were measured against; rows is None when
    nothing was measured, without a timeline or a clock)."""
    long_wait_threshold: int
    phases: dict
    tables: dict
    rows: dict | None


def attribute_run(run, long_wait_threshold: int) -> Attribution:
    """The run's long waits (>= long_wait_threshold), each measured and classed once (lhp.py's rules), and
    counted per phase."""
    snaps = [s for p in run.phases for s in run.snaps(p)]
    rows, listed = lhp.classify_all(snaps, run.timeline, run.clock, long_wait_threshold, run.halts)
    tables = dict(zip(((s.phase, s.rep) for s in snaps if s.long_waits is not None), listed))
    phases = {p: lhp_share.counts(run.snaps(p), [tables[(s.phase, s.rep)] for s in run.snaps(p)
                                                  if s.long_waits is not None]) for p in run.phases}
    return Attribution(long_wait_threshold, phases, tables, rows)
