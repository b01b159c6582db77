"""summary.json: the key figures per phase, computed from a Run and its Attribution (attribution.py;
pure apart from the caller's write).

Per phase: acquisitions, contended share, p50/p99/p99.9 of timed waits (log-uniform within a
log2 bucket, see cdf.py), the share of timed waits >= 2^20 cycles, the LHP share of long waits
(>= the threshold) and lockbench throughput with its interval and change from the baseline.
The host timeline's 'unknown' spans (switches of a vCPU thread the host trace did not record):
how many, their cycles and their share of the vCPU time the timeline covers, per phase and for
the whole run (with each repetition), and named in the problems when there are any.
"""
from dataclasses import dataclass

from . import aggregate, attribution, cdf, kvm_clock, kvm_stats, preemptors, throughput
from . import contract as c
from .buckets import LONG_K
from .names import LHP_CLASS, LONG_WAIT_THRESHOLD


@dataclass
class Options:
    long_wait_threshold: int = LONG_WAIT_THRESHOLD  # the long wait the LHP share attributes (--long-wait-threshold)
    confidence: float = 0.95
    baseline: str | None = None  # None: idle-host if present, else the first phase


def baseline_phase(run, opts: Options) -> str:
    if opts.baseline:
        return opts.baseline
    return "idle-host" if "idle-host" in run.phases else run.phases[0]


def _r(x, nd=6):
    return None if x is None else round(float(x), nd)


def phase_summary(run, phase: str, att, t, opts: Options) -> dict:
    """One phase's figures; t: its aggregate.Totals (None when missing). Its "throughput" is
    summarise's: the change is from the baseline phase's."""
    snaps = run.snaps(phase)
    if t is None:
        return {"status": "missing"}
    timed = int(t.wait.sum())
    lw = {k: v for k, v in att.phases[phase].items() if k != "waits"}  # its counts: summary.json's "lhp"
    lw["share"] = _r(lw["share"])
    trace, unknown = trace_loss(snaps), timeline_unknown(run.timeline, phase)  # this module's parts first
    return {
        "status": "ok" if timed else "empty",
        "repetitions": [s.rep for s in snaps],
        "acquisitions": t.acquisitions, "uncontended": t.uncontended, "contended": t.contended,
        "timed_waits": timed, "overflow": t.overflow,
        "contended_share": _r(t.contended / t.acquisitions if t.acquisitions else None),
        "wait_p50_cycles": _r(cdf.percentile(t.wait, 50), 1),
        "wait_p99_cycles": _r(cdf.percentile(t.wait, 99), 1),
        "wait_p999_cycles": _r(cdf.percentile(t.wait, 99.9), 1),
        "waits_ge_2^20": int(t.wait[LONG_K:].sum()),
        "share_waits_ge_2^20": _r(cdf.share_at_or_above(t.wait, LONG_K)),
        "lhp": lw,
        "throughput": None,  # summarise fills it in: its change is from the baseline phase's
        "trace": trace, "timeline_unknown": unknown,
        "preemptors": preemptors.phase_preemptors(att, snaps, run.timeline),
    }


def _unknown_counts(rows) -> dict:
    """Unknown spans of these timeline rows, their cycles, and the share of all their cycles."""
    length = (rows["end_host_tsc"] - rows["start_host_tsc"]).to_numpy(dtype="int64")
    unknown = (rows["state"] == c.UNKNOWN_STATE).to_numpy()
    total, cycles = int(length.sum()), int(length[unknown].sum())
    return {"spans": int(unknown.sum()), "cycles": cycles, "vcpu_cycles": total,
            "share": _r(cycles / total if total else None, 9)}


def timeline_unknown(timeline, phase: str | None = None) -> dict | None:
    """The timeline's unknown spans (of one phase, or of the whole run with per_repetition);
    None without a timeline."""
    if timeline is None:
        return None
    rows = timeline if phase is None else timeline[timeline["phase"] == phase]
    out = _unknown_counts(rows)
    if phase is None:
        out["per_repetition"] = [{"phase": p, "rep": int(r), **_unknown_counts(g)}
                                 for (p, r), g in rows.groupby(["phase", "rep"], sort=True)]
    return out


def trace_loss(snaps) -> dict | None:
    """The trace sessions' loss counters of a phase: summed over its traced repetitions, and per
    repetition and CPU (exact: read after each session stopped). None when nothing was traced."""
    traced = [s for s in snaps if s.trace is not None]
    if not traced:
        return None
    total = {k: sum(s.trace["loss"][k] for s in traced) for k in c.TRACE_LOSS_COUNTS}
    return {"repetitions": [s.rep for s in traced], "loss": total,
            "damaged_frames": sum(s.trace["damaged_frames"] for s in traced),
            "per_repetition": [{"rep": s.rep, "file": s.trace["file"], "enable_flags": s.trace["enable_flags"],
                                "logger_mode": s.trace["logger_mode"], "events": s.trace["events"],
                                "loss": s.trace["loss"], "cpus": s.trace["cpus"]} for s in traced]}


def build(run, opts: Options) -> dict:
    """summary.json of a run alone, for a test or a tool: merges its counters
    (aggregate.counters), attributes its long waits (attribution.attribute_run) and summarises
    them. The report does each once and calls summarise."""
    return summarise(run, attribution.attribute_run(run, opts.long_wait_threshold), aggregate.counters(run), opts)


def summarise(run, att, counters, opts: Options) -> dict:
    """summary.json (without its verdict) of a run whose counters were merged (counters,
    aggregate.Counters) and whose long waits att attributed. What this module reads from the run
    and the attribution comes first, then the phases, then the throughput with its change and the
    other modules' sections."""
    base = baseline_phase(run, opts)
    status = run.status or {}
    unknown, clock = timeline_unknown(run.timeline), clock_summary(run)
    ours = lhp_problems(run, opts) + timeline_problems(run) + disagreement_problems(att.phases)
    phases = {p: phase_summary(run, p, att, counters.totals[p], opts) for p in run.phases}
    tp = throughput.phases_throughput({p: run.snaps(p) for p in run.phases}, base, opts.confidence)
    for p, t in tp.items():
        phases[p]["throughput"] = t
    return {"format": 1, "run_id": run.run_id, "state": status.get("state", "unknown"),
            "reason": status.get("reason", ""), "long_wait_threshold": opts.long_wait_threshold,
            "confidence": opts.confidence, "baseline_phase": base if base in phases else None,
            "phases": phases, "timeline_unknown": unknown,
            "kvm_stats": kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases), "clock": clock,
            "problems": run.problems + counters.problems + ours}


def clock_summary(run) -> dict | None:
    """Which clock placed guest times on the host's axis (kvm_clock.py): "source" kvm-tsc-offset
    or sampled-fit, its bounds in host cycles, under KVM what was decided ("kvm_tsc": the offset
    read, its check against the fit, or why it was not taken), and the fit's "reference" (the
    guest's reference clock, clock.json; None before it existed). None without a clock."""
    if run.clock is None:
        return None
    return {"source": kvm_clock.METHOD if run.clock.get("method") == kvm_clock.METHOD else "sampled-fit",
            "bound_max_cycles": run.clock.get("bound_max_cycles"),
            "bound_median_cycles": run.clock.get("bound_median_cycles"), "kvm_tsc": run.kvm_clock,
            "reference": (run.clock_fit or {}).get("reference")}


def timeline_problems(run) -> list:
    """The host timeline's unknown time, when there is any."""
    u = timeline_unknown(run.timeline)
    if not u or not u["spans"]:
        return []
    return [f"{c.TIMELINE}: {u['spans']} span(s) of unknown state, {u['cycles']} cycles, "
            f"{u['cycles'] / u['vcpu_cycles']:.3%} of the vCPU time it covers: switches of a vCPU thread the host trace "
            "did not record. The attribution counts that time as on-CPU for the least and as off-CPU for the most "
            "off time, so a wait whose class depends on it is uncertain."]


def disagreement_problems(counts: dict) -> list:
    """Where the guest's steal time and the host timeline said different things of a wait's side;
    counts: each phase's counts (Attribution.phases)."""
    out = []
    for phase, s in counts.items():
        d = s["disagreements"]
        if d["total"]:
            out.append(f"Phase {phase}: steal time and the host timeline disagreed on {d['total']} of "
                       f"{d['sides_compared']} wait sides both spoke of ({d['steal_silent_timeline_off']} with no steal "
                       f"while the timeline had the vCPU off: a frozen, sleeping or blocked vCPU thread accrues no "
                       f"steal time; {d['steal_off_timeline_on']} with steal time while the timeline had the vCPU off for "
                       "less than the threshold). The timeline decided them.")
    return out


def lhp_problems(run, opts: Options) -> list:
    """What limits the LHP verdict: no list of long waits, a list cut short, nothing to join with."""
    out = []
    for s in run.snapshots:
        if s.long_waits is None:
            out.append(f"{s.name}: no long_waits list, so its long waits cannot be attributed.")
        elif s.long_wait_threshold and s.long_wait_threshold > opts.long_wait_threshold:
            out.append(f"{s.name}: the guest listed only waits >= {s.long_wait_threshold} cycles, above the "
                       f"threshold {opts.long_wait_threshold}; shorter long waits are not attributed.")
        if s.long_waits_dropped:
            out.append(f"{s.name}: {s.long_waits_dropped} long wait(s) are missing from its list: the trace lost "
                       "that many events (EventsLost; with groups other than long-wait traced, at most that many).")
        if s.trace is not None:
            t, loss = s.trace, s.trace["loss"]
            if loss["log_buffers_lost"] or loss["realtime_buffers_lost"] or t["damaged_frames"]:
                out.append(f"{s.name}: the trace lost whole buffers (LogBuffersLost {loss['log_buffers_lost']}, "
                           f"RealTimeBuffersLost {loss['realtime_buffers_lost']}, damaged frames "
                           f"{t['damaged_frames']}): an unknown number of long waits is missing from its list.")
            if not t["counters_found"]:
                out.append(f"{s.name}: its trace file {t['file']} has no loss counters (cut short): "
                           "its losses are unknown.")
    unknown = any(w["lhp_class"] == LHP_CLASS.kUnknown for s in run.snapshots for w in (s.long_waits or []))
    if unknown and run.timeline is None:
        out.append("No host timeline (timeline.csv): long waits the guest could not classify stay unknown.")
    elif unknown and run.clock is None:
        out.append("No clock correlation (clock.json): the host timeline cannot be joined with guest waits.")
    return out
