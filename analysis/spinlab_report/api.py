"""The package's public API: a results directory as pandas DataFrames, for a researcher's own
analysis (a notebook, a script). analysis/README.md, "The Python API", documents it.

    import spinlab_report as s
    r = s.load("results/latest")
    r.waits.groupby("cause").size()

`load` reads the directory with the same reader the report uses (reader.load_run) and attributes
every long wait once with the same code (attribution.attribute_run), so every number here is the
report's. Nothing is computed twice: the summary, the verdict and the DataFrames read that one
attribution, built once per Results.
"""
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import aggregate, attribution, lhp, summary, verdict as verdict_rules
from .reader import Run, load_run
from .names import LHP_CLASS

# The columns of Results.waits, in order (analysis/README.md describes each). A wait's classes
# have the per-wait rows' names (lhp.py): lock_class (the lock's), lhp_class (the guest's, from
# steal time), timeline_class (the host timeline's alone) and cause (the class the report counts).
WAIT_COLUMNS = ("phase", "rep", "cpu", "lock_class", "start_tsc", "wait_cycles", "holder_cpu",
                "holder_end_cpu", "holders", "lhp_class", "timeline_class", "holder_off_min_share",
                "holder_off_max_share", "holder_side", "holder_source", "waiter_off_min_share",
                "waiter_off_max_share", "waiter_side", "waiter_source", "cause", "in_repetition",
                "host_start_tsc", "bound_cycles")
# The per-class counters of Results.classes beside its keys and histograms.
CLASS_KEYS = ("phase", "rep", "cpu", "lock_class")


@dataclass
class Results:
    """One results directory. DataFrames: waits (one row per long wait at or above threshold),
    classes (one row per phase, repetition, CPU and lock class), timeline (timeline.csv, None
    without one). Dicts: meta (meta.json), clock (clock.json, None without one), summary
    (summary.json as the report writes it) and verdict (its "verdict"). problems: what the
    reader left out or could not use, in sentences (the report prints them first)."""
    path: str
    run_id: str
    meta: dict
    long_wait_threshold: int
    waits: pd.DataFrame
    classes: pd.DataFrame
    timeline: pd.DataFrame | None
    clock: dict | None
    summary: dict
    problems: list = field(default_factory=list)
    run: Run | None = field(default=None, repr=False)  # the reader's own objects, for the report's modules

    @property
    def verdict(self) -> dict:
        return self.summary["verdict"]

    @property
    def phases(self) -> list:
        return self.run.phases


def _side_names(codes) -> np.ndarray:
    return np.array(lhp.SIDES, dtype=object)[codes]


def _source_names(codes) -> np.ndarray:
    return np.array(lhp.SOURCES, dtype=object)[codes]


def _waits_of(phase: str, att) -> pd.DataFrame:
    """One snapshot's attributed long waits (lhp.Attributed) as rows of WAIT_COLUMNS."""
    lw, pos = att.lw, att.pos
    wait = att.wait_cycles().astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = lambda x: np.where(wait > 0, x / wait, np.nan)
        cols = {
            "phase": np.full(len(att), phase, dtype=object), "rep": np.full(len(att), att.rep, dtype=np.int64),
            "cpu": att.cpu(), "lock_class": np.array(lw.class_names, dtype=object)[lw.lock_class[pos]],
            "start_tsc": att.start_tsc(), "wait_cycles": att.wait_cycles(),
            "holder_cpu": pd.array(np.where(att.holder_cpu() < 0, pd.NA, att.holder_cpu()), dtype="Int64"),
            "holder_end_cpu": pd.array(np.where(att.holder_end_cpu() < 0, pd.NA, att.holder_end_cpu()), dtype="Int64"),
            "holders": [lhp.holders_of(lw[int(i)]) for i in pos],
            "lhp_class": np.array(lw.lhp_names, dtype=object)[lw.lhp_code[pos]],
            "timeline_class": att.timeline_class(),
            "holder_off_min_share": share(att.h_lo), "holder_off_max_share": share(att.h_hi),
            "holder_side": _side_names(att.side["holder"]), "holder_source": _source_names(att.source["holder"]),
            "waiter_off_min_share": share(att.w_lo), "waiter_off_max_share": share(att.w_hi),
            "waiter_side": _side_names(att.side["waiter"]), "waiter_source": _source_names(att.source["waiter"]),
            "cause": att.cause(), "in_repetition": att.in_repetition,
            "host_start_tsc": att.host_start, "bound_cycles": att.bound,
        }
    return pd.DataFrame(cols, columns=list(WAIT_COLUMNS))


def waits_frame(run: Run, att: attribution.Attribution) -> pd.DataFrame:
    """Every listed long wait (>= the threshold) of the run as att attributed it (the report's
    attribution), phase by phase in the report's order."""
    parts = []
    for phase in run.phases:
        parts += [_waits_of(phase, t) for t in att.phases[phase]["waits"].tables]
    if not parts:
        return pd.DataFrame({c: [] for c in WAIT_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def classes_frame(run: Run) -> pd.DataFrame:
    """The per-CPU lock-class counters of every snapshot: the counts of the file, the LHP classes'
    counts and cycles (lhp_<class>_count, lhp_<class>_cycles, the class's
    name with '_' for '-': lhp_holder_preempted_count) and the log2 histograms (wait_hist,
    hold_hist: 64 counts each, bucket k = [2^k, 2^(k+1)) cycles)."""
    rows = []
    for phase in run.phases:
        for s in run.snaps(phase):
            for st in s.stats:
                row = {"phase": phase, "rep": s.rep, "cpu": st.cpu, "lock_class": st.lock_class, **st.counts}
                for cls in LHP_CLASS:
                    got = st.lhp.get(cls, {"count": 0, "cycles": 0})
                    key = cls.replace("-", "_")
                    row[f"lhp_{key}_count"], row[f"lhp_{key}_cycles"] = got["count"], got["cycles"]
                row["wait_hist"], row["hold_hist"] = st.wait, st.hold
                rows.append(row)
    if not rows:
        return pd.DataFrame({c: [] for c in CLASS_KEYS})
    df = pd.DataFrame(rows)
    counts = [c for c in df.columns if c not in CLASS_KEYS and c not in ("wait_hist", "hold_hist")]
    df[counts] = df[counts].astype("Int64")  # optional counters absent in some rows stay <NA>, not float
    return df


def load(results_dir: str, long_wait_threshold: int | None = None, confidence: float = 0.95,
         baseline: str | None = None) -> Results:
    """Read a results directory (spinlab-run's, the results contract in analysis/README.md).

    long_wait_threshold: the long wait in TSC cycles (the report's --long-wait-threshold; default the kernel's
    long-wait default); confidence and baseline as the report's --confidence and --baseline.
    Raises load.ContractError when the directory cannot be read at all (no meta.json); anything
    less is a sentence in .problems, and the rest is read."""
    run = load_run(results_dir)
    opts = summary.Options(confidence=confidence, baseline=baseline)
    if long_wait_threshold is not None:
        opts.long_wait_threshold = int(long_wait_threshold)
    att = attribution.attribute_run(run, opts.long_wait_threshold)
    summ = summary.summarise(run, att, aggregate.counters(run), opts)
    summ["verdict"] = verdict_rules.judge(run, att, summ)
    return Results(path=run.path, run_id=run.run_id, meta=run.meta.recorded, long_wait_threshold=opts.long_wait_threshold,
                   waits=waits_frame(run, att), classes=classes_frame(run), timeline=run.timeline,
                   clock=run.clock, summary=summ, problems=list(summ["problems"]), run=run)
