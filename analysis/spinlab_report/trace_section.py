"""The report's "Trace" section: the tables of the trace state machine (trace_replay) and its two
figures, for each trace file of a run (snapshots/<phase>-r<rep>.trace) or for one trace given
with `spinlab-report --trace FILE`. A run's trace files (up to MAX_TRACES), when there are several
or they add up to PARALLEL_BYTES or more, are replayed side by side, a forked process per CPU
(parallel.py)."""
import glob
import os

import numpy as np

from . import fig_trace_timeline, fig_wake_cdf, parallel, progress, trace_replay, trace_stacks
from .names import LONG_WAIT_THRESHOLD

MAX_TRACES = 4  # traces of a run analysed in its report (the rest are named)


def _c(v):
    return "—" if v is None else str(v)


def _pct(v):
    return "—" if v is None else f"{100 * v:.1f}%"


def _us(cycles, hz):
    return "—" if cycles is None else f"{cycles * 1e6 / hz:.2f}"


def blocks(a, figdir: str, label: str, top: int = 10) -> list:
    hz = a.tsc_hz
    slug = "".join(ch if ch.isalnum() else "_" for ch in label)
    figs = [fig_trace_timeline.make(a, figdir, f"trace_timeline_{slug}"), fig_wake_cdf.make(a, figdir, f"wake_cdf_{slug}")]
    out = [("h2", f"Trace: {label}"),
           ("p", f"{a.events} events on {a.cpus} CPUs over {(a.end - a.start) * 1e3 / hz:.3f} ms of guest time "
                 f"(TSC {hz} Hz); {a.discarded_events} events lost by the tracer. Times are TSC cycles unless "
                 "µs is said. Read through spinlab-collect's column export"
                 + (f" (a trace file of ABI version {a.abi_version})." if a.abi_version is not None else "."))]
    out += [("table", ["thread", "process", "name", "start (cycles)", "end (cycles)"],
             [[str(t["thread_id"]), str(t["process_id"]), _c(t["name"]), t["start"] is None and "before the trace" or str(t["start"]),
               t["end"] is None and "after the trace" or str(t["end"])] for t in a.threads]),
            ("table", ["process", "parent", "name", "start", "end", "exit code"],
             [[str(p["process_id"]), _c(p["parent_id"]), _c(p["name"]), _c(p["start"]), _c(p["end"]), _c(p["exit_code"])]
              for p in a.processes])]
    out += [("p", "CPU use: exact from context switches, estimated from profile samples (share of all samples)."),
            ("table", ["thread", "process", "name", "exact cycles", "exact share", "samples", "sampled share"],
             [[str(r["thread_id"]), str(r["process_id"]), _c(r["name"]), str(r["exact_cycles"]), _pct(r["exact_share"]),
               str(r["samples"]), _pct(r["sampled_share"])] for r in a.cpu_use_threads]),
            ("table", ["process", "name", "exact cycles", "exact share", "samples", "sampled share"],
             [[str(r["process_id"]), _c(r["name"]), str(r["exact_cycles"]), _pct(r["exact_share"]), str(r["samples"]),
               _pct(r["sampled_share"])] for r in a.cpu_use_processes]),
            ("table", ["CPU", "idle (exact)", "idle (sampled)", "samples"],
             [[str(r["cpu"]), _pct(r["exact_idle_share"]), _pct(r["sampled_idle_share"]), str(r["samples"])]
              for r in a.cpu_idle])]
    out += [("table", ["system call", "count", "p50", "p99", "max"],
             [[str(r["number"]), str(r["count"]), str(r["p50"]), str(r["p99"]), str(r["max"])] for r in a.syscalls]
             or [["none", "—", "—", "—", "—"]])]
    out += [("table", [f"top {top} locks by total wait", "class", "events", "contended", "total wait", "max wait"],
             [[hex(r["lock_address"]), str(r["class_id"]), str(r["events"]), str(r["contended"]), str(r["total_wait"]),
               str(r["max_wait"])] for r in a.top_locks] or [["none", "—", "—", "—", "—", "—"]]),
            ("table", [f"top {top} call sites (acquire site; with stacks: the call-site section)", "events", "contended", "total wait"],
             [[hex(r["call_site"]), str(r["events"]), str(r["contended"]), str(r["total_wait"])]
              for r in a.top_call_sites] or [["none", "—", "—", "—"]])]
    d = a.wake_delays
    out += [("table", ["waker (0: interrupt)", "wakee", "wakes"],
             [[str(e["waker"]), str(e["wakee"]), str(e["count"])] for e in a.wake_edges[:top]] or [["none", "—", "—"]]),
            ("p", "Wake-to-run delay: " + (f"{len(d)} wakes, p50 {_us(int(np.percentile(d, 50)), hz)} µs, "
                                           f"p99 {_us(int(np.percentile(d, 99)), hz)} µs, max {_us(max(d), hz)} µs."
                                           if d else "no wake was followed by its thread running.")
                  + (" Chains (who woke whom, oldest first): " + "; ".join(" → ".join(map(str, c["chain"]))
                                                                            for c in a.wake_chains[:top]) + "."
                     if a.wake_chains else ""))]
    out += [("table", ["long wait at", "CPU", "waiter", "wait", "holder CPU", "holder thread", "running holder",
                       "other thread", "idle", "host off-CPU", "mostly"],
             [[str(w["tsc"]), str(w["cpu"]), str(w["waiter"]), str(w["wait_cycles"]), _c(w["holder_cpu"]),
               _c(w["holder_thread"]), _pct(w["holder_running"]), _pct(w["other_thread"]), _pct(w["idle"]),
               _pct(w["host_off"]), w["verdict"]] for w in a.long_waits[:50]] or [["none"] + ["—"] * 10])]
    return out + [("figures", figs)]


def run_traces(run) -> list:
    return sorted(glob.glob(os.path.join(run.path, "snapshots", "*.trace")))


PARALLEL_BYTES = 4 << 20  # trace files at least this large in total are replayed side by side (parallel.py)


def _one_trace(f: str, timeline, clock, figdir: str, long_wait_threshold: int) -> tuple:
    """(the Trace section of one trace file of the run, None) or, for a file that cannot be read,
    (a section saying so, the reason): run in a worker process when the files are big."""
    label = os.path.basename(f)
    try:
        a = trace_replay.replay(f, long_wait_threshold=long_wait_threshold, timeline=timeline, clock=clock)
    except (ValueError, OSError) as e:
        return [("h2", f"Trace: {label}"), ("p", f"Not analysed: {e}")], str(e)
    return blocks(a, figdir, label), None


def run_section(run, figdir: str, long_wait_threshold: int = LONG_WAIT_THRESHOLD) -> tuple:
    """(the Trace sections of a run, its problems): both empty when it has no trace files. A
    problem names a trace file that could not be read, or a phase whose call stacks could not be
    made, and why; the report lists them with the run's other problems (and summary.json)."""
    files = run_traces(run)
    if not files:
        return [], []
    timeline = run.timeline if run.clock is not None else None  # a DataFrame: host_off_fn indexes it in numpy
    clock = run.clock if run.timeline is not None else None
    chosen = files[:MAX_TRACES]
    # Side by side when the files are big, or when there are several: each file's figure alone
    # takes ~0.3 s to draw, against ~50 ms to start a process (a cell of the mitigation study:
    # four small traces, 1.8 s in one process).
    big = sum(os.path.getsize(f) for f in chosen) >= PARALLEL_BYTES or len(chosen) > 1
    # One stage: the chosen files replayed, then the call stacks of every file, summed per phase
    # (the report's folder is figdir's parent).
    with progress.stage("traces", progress.count(len(files), "trace files")):
        parts = parallel.forked_map(lambda f: _one_trace(f, timeline, clock, figdir, long_wait_threshold), chosen, big=big)
        stacks = trace_stacks.run(files, os.path.dirname(figdir), spec_text=run.spec_text)
    out, problems = [], []
    for f, (part, unread) in zip(chosen, parts):
        out += part
        if unread:
            problems.append(f"{os.path.relpath(f, run.path)}: the trace is not analysed: {_reason(f, unread)}")
    if len(files) > MAX_TRACES:
        out.append(("p", f"{len(files) - MAX_TRACES} more trace files not analysed here: "
                         + ", ".join(os.path.basename(f) for f in files[MAX_TRACES:])))
    out += trace_stacks.blocks(stacks)
    problems += [f"Call stacks of phase {p['phase']} (its trace files) not made: {p['error']}"
                 for p in stacks if p["error"]]
    return out, problems


def _reason(path: str, message: str) -> str:
    """A reader's message without the file's path in front (the problem names the file)."""
    return message[len(path) + 2:] if message.startswith(f"{path}: ") else message
