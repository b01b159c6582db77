"""Lab 4 checker: a trace with call stacks, the lock call site with the most wait, and the trace
opened in the Perfetto UI's format and in babeltrace2.

Expected observations (the worksheet's order):
  1. stacks     the run's traces carry call stacks (spinlab-collect trace stacks finds lock call
                sites with stacks)
  2. top site   the call site with the most wait is named with functions (not bare addresses), and
                it is lockbench's lock: a frame of [lockbench] or of the kernel's ring-3 lock path
  3. perfetto   trace-export/<phase>-r<rep>.json is Chrome trace-event JSON with events in it
  4. babeltrace2 trace-export/<phase>-r<rep>.ctf/ opens in babeltrace2 and prints events
The stacks are read from the report's stacks/<phase>/sites.tsv when `spinlab report` made it,
else made into a temporary folder.
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import spinlab_report as report
from spinlab_labs import observe
from spinlab_labs.observe import LabInputError, Observation

TITLE = "Tracing and call stacks"
GOAL = ("Record a trace with call stacks, find the lock call site with the most wait, and open the "
        "trace in Perfetto and in babeltrace2.")
MINUTES = "about 1.5 min (estimate)"
RUNS = [(None, [])]

BT_TIMEOUT_S = 60


def _sites(run) -> list:
    """[(phase, sites)] of the run's traces: the report's sites.tsv, else spinlab-collect's."""
    files = sorted(glob.glob(os.path.join(run.path, "snapshots", "*.trace")))
    if not files:
        return []
    made = {report.stacks_phase(f) for f in files}
    have = {p: os.path.join(run.path, "stacks", p, "sites.tsv") for p in made}
    if all(os.path.exists(f) for f in have.values()):
        return [(p, report.stacks_sites(f)) for p, f in sorted(have.items())]
    tmp = tempfile.mkdtemp(prefix="spinlab-lab4-")
    try:
        return [(r["phase"], r["sites"]) for r in report.stacks_run(files, tmp, spec_text=run.spec_text)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _named(frame: str) -> bool:
    return not frame.lstrip("[?] ").startswith("0x")


def _is_lockbench(frames: list) -> bool:
    return any("[lockbench]" in f or "user_spinlock" in f for f in frames)


def _stack_obs(run) -> list:
    sites = [(p, s) for p, s in _sites(run) if s]
    n = sum(len(s) for _, s in sites)
    stacks = Observation("stacks", "the traces carry call stacks: lock call sites with stacks are found", bool(sites),
                         f"{n} call sites with stacks in phase(s) {', '.join(p for p, _ in sites)}" if sites else
                         "no trace of this run carries a call stack (was it recorded with [trace] stack-enable?)")
    expected = ("the call site with the most wait is named with functions and is lockbench's lock "
                "([lockbench] frames, or the kernel's ring-3 lock path)")
    if not sites:
        return [stacks, Observation("top site", expected, False, "there are no call sites to rank")]
    phase, top = max(((p, s[0]) for p, s in sites), key=lambda ps: ps[1]["total_wait"])
    path = " <- ".join(top["frames"][:6])
    ok = any(_named(f) for f in top["frames"]) and _is_lockbench(top["frames"])
    why = f"{phase}: {top['total_wait']:,} cycles of wait in {top['contended']} waits at {path}"
    if not ok:
        why += ("; its frames are bare addresses (no kernel ELF to name them)" if not any(map(_named, top["frames"]))
                else "; that is not lockbench's lock")
    return [stacks, Observation("top site", expected, ok, why)]


def _perfetto(run) -> Observation:
    files = sorted(glob.glob(os.path.join(run.path, "trace-export", "*.json")))
    expected = "trace-export/<phase>-r<rep>.json loads as Chrome trace-event JSON with events (Perfetto UI)"
    if not files:
        return Observation("perfetto", expected, False, "no trace-export/*.json (record with [trace] export = perfetto)")
    try:
        with open(files[0], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return Observation("perfetto", expected, False, f"{files[0]} does not load: {e}")
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return Observation("perfetto", expected, len(events) > 0,
                       f"{os.path.relpath(files[0], run.path)}: {len(events):,} trace events")


def _babeltrace(run) -> Observation:
    dirs = sorted(d for d in glob.glob(os.path.join(run.path, "trace-export", "*.ctf")) if os.path.isdir(d))
    expected = "trace-export/<phase>-r<rep>.ctf/ opens in babeltrace2 and prints events"
    if not dirs:
        return Observation("babeltrace2", expected, False, "no trace-export/*.ctf/ (record with [trace] export = ctf)")
    if shutil.which("babeltrace2") is None:
        return Observation("babeltrace2", expected, False, "babeltrace2 is not installed (Debian: babeltrace2)")
    lines = []
    with subprocess.Popen(["babeltrace2", dirs[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        try:
            for line in p.stdout:
                lines.append(line.rstrip())
                if len(lines) >= 3:
                    break
        finally:
            p.kill()
            err = p.stderr.read()[-300:] if not lines else ""
    rel = os.path.relpath(dirs[0], run.path)
    return Observation("babeltrace2", expected, bool(lines),
                       f"{rel}: first event: {lines[0][:160]}" if lines else f"{rel}: babeltrace2 printed no event {err}")


def check(results_dir: str) -> list:
    run = observe.load_results(results_dir)
    if not run.snapshots:
        raise LabInputError(f"{results_dir} has no snapshot: lab 4 needs results of `spinlab lab start 4`")
    return [*_stack_obs(run), _perfetto(run), _babeltrace(run)]
