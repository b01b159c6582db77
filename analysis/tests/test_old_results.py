"""Every results directory spinlab has written stays readable (issue 42). data/old-results/ holds
real runs of each version that has shipped (its README says which commit wrote each, and how):
trace ABI 1 (c3023ae, 2026-11-26) and trace ABI 2 (today's format); results contract format 1
throughout. Each is reported in full, and each trace is replayed and checked against what the
runner of that version itself read from it when it wrote the snapshot (the events in the file,
the losses, and every long wait with its CPU, start and length). A trace file of a version no
reader knows is a named problem of the run. Needs `make host` (spinlab-collect reads the traces)."""
import dataclasses
import json
import lzma
import os
import shutil
import subprocess

import pytest

from spinlab_report import reader, report, summary, trace_replay

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "data", "old-results")
BIN = os.path.join(HERE, "..", "..", "build", "host", "bin")
COLLECT = os.path.join(BIN, "spinlab-collect")
# results directory -> the trace ABI version its traces were written in
RUNS = {"2026-11-26-c3023ae": 1, "2026-11-28-3cf274b": 2}

pytestmark = pytest.mark.skipif(not os.access(COLLECT, os.X_OK), reason="needs the host build (make host)")


def unpacked(name: str, dst) -> str:
    """A copy of a kept run, its timeline.csv unpacked (kept xz-compressed: 450-570 KB as text)."""
    d = os.path.join(str(dst), name)
    shutil.copytree(os.path.join(OLD, name), d)
    xz = os.path.join(d, "timeline.csv.xz")
    with lzma.open(xz) as src, open(os.path.join(d, "timeline.csv"), "wb") as out:
        shutil.copyfileobj(src, out)
    os.remove(xz)
    return d


@pytest.fixture(scope="module", params=sorted(RUNS))
def old_run(request, tmp_path_factory):
    """(a copy of a kept run, its trace ABI version): each run once per module."""
    if request.param not in _copies:
        _copies[request.param] = unpacked(request.param, tmp_path_factory.mktemp("old")), RUNS[request.param]
    return _copies[request.param]


_copies = {}
_reports = {}


@pytest.fixture(scope="module")
def reported(old_run):
    """(path, trace ABI, summary.json, report.md) of the run's report, made once per run."""
    path, abi = old_run
    if path not in _reports:
        out = os.path.join(path, "report")
        report.generate(reader.load_run(path), out, summary.Options())
        with open(os.path.join(out, "summary.json")) as f:
            summ = json.load(f)
        with open(os.path.join(out, "report.md")) as f:
            _reports[path] = path, abi, summ, f.read()
    return _reports[path]


def snapshots_with_traces(path: str) -> list:
    out = []
    for name in sorted(os.listdir(os.path.join(path, "snapshots"))):
        if name.endswith(".json"):
            with open(os.path.join(path, "snapshots", name)) as f:
                s = json.load(f)
            if s.get("trace"):
                out.append(s)
    return out


def test_the_kept_runs_are_what_the_readme_says():
    for name, abi in RUNS.items():
        with open(os.path.join(OLD, name, "meta.json")) as f:
            assert json.load(f)["git_rev"].startswith(name.rsplit("-", 1)[1])
        for t in ("idle-host-r1.trace", "host-load-r1.trace"):
            with open(os.path.join(OLD, name, "snapshots", t), "rb") as f:
                head = f.read(12)
            assert head[:8] == b"LPBTRACE" and int.from_bytes(head[8:12], "little") == abi, (name, t)


def test_each_run_is_reported_with_every_trace_analysed(reported):
    path, abi, summ, md = reported
    assert summ["state"] == "complete"
    assert not [p for p in summ["problems"] if ".trace" in p or "Call stacks" in p], summ["problems"]
    assert "Not analysed" not in md
    snaps = snapshots_with_traces(path)
    assert len(snaps) == 2
    for s in snaps:
        label = os.path.basename(s["trace"]["file"])
        section = md.split(f"## Trace: {label}\n", 1)[1]
        # The section's first line: the events in the file, as the runner counted them.
        assert section.lstrip().startswith(f"{s['trace']['events']} events on 2 CPUs"), section[:200]
        assert f"(a trace file of ABI version {abi})." in section.split("\n## ", 1)[0]


def test_each_trace_replays_to_what_its_own_runner_read_from_it(old_run):
    path, abi = old_run
    run = reader.load_run(path)
    off = []
    for s in snapshots_with_traces(path):
        a = trace_replay.replay(os.path.join(path, s["trace"]["file"]), long_wait_threshold=s["long_waits_min_cycles"],
                                timeline=run.timeline, clock=run.clock)
        assert a.abi_version == abi
        assert (a.events, a.discarded_events, a.cpus) == (s["trace"]["events"], s["trace"]["loss"]["events_lost"], 2)
        # Every long wait the runner listed from this trace, and no other: CPU, start, length.
        mine = sorted((w["cpu"], w["tsc"], w["wait_cycles"]) for w in a.long_waits)
        theirs = sorted((w["cpu"], w["start_tsc"], w["wait_cycles"]) for w in s["long_waits"])
        assert mine == theirs and len(mine) >= 10, s["trace"]["file"]
        # The lock totals add the same waits up; each wait's holder is the CPU the runner named.
        assert sum(r["total_wait"] for r in a.top_locks) == sum(w["wait_cycles"] for w in s["long_waits"])
        holders = {(w["cpu"], w["start_tsc"]): w["holder_end_cpu"] if w["holder_cpu"] is None else w["holder_cpu"]
                   for w in s["long_waits"]}
        assert {(w["cpu"], w["tsc"]): w["holder_cpu"] for w in a.long_waits} == holders
        off += [w["host_off"] for w in a.long_waits if w["host_off"] is not None]
    # Measured against the run's host timeline: the share of a wait its holder's vCPU was off the
    # host CPU (none for a wait the clock fit does not map: 3cf274b's run took its first clock
    # sample after idle-host's waits).
    assert len(off) >= 10 and all(0 <= x <= 1 for x in off) and max(off) > 0


def test_the_hand_made_trace_of_abi_1_replays_as_todays(tmp_path):
    """traces/state_machine.txt, written by c3023ae's trace_script (ABI 1) and by today's: the same
    script (unchanged since) gives the same analysis, the version apart."""
    today = str(tmp_path / "sm.trace")
    subprocess.run([os.path.join(BIN, "trace_script"), os.path.join(HERE, "traces", "state_machine.txt"), today],
                   check=True)
    old = trace_replay.replay(os.path.join(OLD, "state_machine-abi1.trace"), long_wait_threshold=1000)
    new = trace_replay.replay(today, long_wait_threshold=1000)
    assert (old.abi_version, new.abi_version) == (1, 2)
    assert list(old.long_waits) == list(new.long_waits) and len(old.long_waits) > 0
    assert dataclasses.replace(old, abi_version=2, long_waits=None) == dataclasses.replace(new, long_waits=None)
    assert old.events > 0 and old.top_locks[0]["total_wait"] == 3100  # test_trace_replay's hand-worked figure


# Members results contract format 1 gained during 2026-11-26, before c3023ae wrote its run (git log
# -p analysis/README.md experiments/runner): meta.json host.hypervisor (74d04d9), clock.json
# host_tsc_hz, drift_note, drift_coverage and noise_floor_cycles (30823ff), a long wait's holds,
# holder_steal_ns and waiter_steal_ns (5895cb8).
ADDED_ON_11_26 = {"meta.json": ("host", "hypervisor"),
                  "clock.json": ("host_tsc_hz", "drift_note", "drift_coverage", "noise_floor_cycles"),
                  "long_waits": ("holds", "holder_steal_ns", "waiter_steal_ns")}


@pytest.mark.parametrize("old_run", ["2026-11-26-c3023ae"], indirect=True)
def test_a_run_without_the_members_format_1_gained_on_11_26_reports_alike(reported, tmp_path):
    """c3023ae's run with those members taken out, as the commits of that morning wrote it: no
    problem is added, its traces are analysed, and the LHP counts (decided by the host timeline)
    are those of the run as written."""
    path, abi, summ, _ = reported
    assert abi == 1
    d = unpacked(os.path.basename(path), tmp_path)

    def edit(name, change):
        with open(os.path.join(d, name)) as f:
            o = json.load(f)
        change(o)
        with open(os.path.join(d, name), "w") as f:
            json.dump(o, f)

    edit("meta.json", lambda o: o["host"].pop("hypervisor"))
    edit("clock.json", lambda o: [o.pop(k) for k in ADDED_ON_11_26["clock.json"] if k in o])
    for snap in ("idle-host-r1.json", "host-load-r1.json"):
        edit(os.path.join("snapshots", snap),
             lambda o: [w.pop(k) for w in o["long_waits"] for k in ADDED_ON_11_26["long_waits"]])
    out = os.path.join(d, "report")
    report.generate(reader.load_run(d), out, summary.Options())
    with open(os.path.join(out, "summary.json")) as f:
        older = json.load(f)
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    assert older["problems"] == summ["problems"] == []
    assert md.count("## Trace: ") == 2 and "Not analysed" not in md
    keys = ("long_waits", "holder_off", "holder_on", "uncertain", "unknown")
    lhp = lambda s: {k: s["phases"]["host-load"]["lhp"][k] for k in keys}  # noqa: E731
    assert lhp(older) == lhp(summ) and lhp(summ)["long_waits"] >= 10


def test_a_trace_of_a_version_no_reader_knows_is_a_named_problem(tmp_path):
    path = unpacked("2026-11-28-3cf274b", tmp_path)
    bad = os.path.join(path, "snapshots", "host-load-r1.trace")
    with open(bad, "r+b") as f:
        f.seek(8)
        f.write((9).to_bytes(4, "little"))  # abi_version
    out = os.path.join(path, "report")
    report.generate(reader.load_run(path), out, summary.Options())
    with open(os.path.join(out, "summary.json")) as f:
        problems = json.load(f)["problems"]
    want = ("snapshots/host-load-r1.trace: the trace is not analysed: trace file of ABI version 9, which this "
            "spinlab does not read (it reads versions 1 and 2)")
    assert want in problems
    assert any(p.startswith("Call stacks of phase host-load (its trace files) not made: ") and "ABI version 9" in p
               for p in problems)
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    missing = md.split("## What is missing", 1)[1].split("\n## ", 1)[0]
    assert want in missing
    assert "## Trace: idle-host-r1.trace" in md and "Not analysed: " in md  # the other trace still is
