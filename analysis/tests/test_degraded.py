"""Missing phase, empty histogram, partial run, broken files: the report says so, no traceback."""
import contextlib
import io
import json
import os
import subprocess
from types import SimpleNamespace

from conftest import TOOL
from spinlab_report import cli


def run_tool(*args):
    """The CLI in this process (no second matplotlib start-up); an uncaught exception fails the test."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = cli.main([str(a) for a in args])
    return SimpleNamespace(returncode=rc, stderr=err.getvalue(), stdout=out.getvalue())


def run_executable(*args):
    return subprocess.run(["/usr/bin/python3", TOOL, *map(str, args)], capture_output=True, text=True, timeout=120)


def edit_json(path, fn):
    d = json.load(open(path))
    fn(d)
    json.dump(d, open(path, "w"))


def report_texts(run):
    return open(run / "report.md").read(), open(run / "report.html").read(), json.load(open(run / "summary.json"))


def test_missing_phase(run_copy):
    for r in (1, 2):
        os.remove(run_copy / "snapshots" / f"host-load-r{r}.json")
    p = run_tool(run_copy)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    md, html, s = report_texts(run_copy)
    assert "Phase host-load is missing: no snapshot was recorded for it." in md
    assert "Phase host-load is missing" in html
    assert s["phases"]["host-load"] == {"status": "missing"}
    assert "phase host-load: missing (no snapshot recorded)" in open(run_copy / "table.txt").read()
    assert "| host-load | missing | — | — | — | — |" in md  # the LHP table keeps the row and says why


def test_empty_histogram(run_copy):
    def no_waits(d):
        for cpu in d["cpus"]:
            for c in cpu["classes"].values():
                c["acquisitions"] = c["uncontended"] + c["wait_overflow"]
                c["wait_hist"] = {}
        d["long_waits"] = []
    for name in os.listdir(run_copy / "snapshots"):
        edit_json(run_copy / "snapshots" / name, no_waits)
    p = run_tool(run_copy)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    md, html, s = report_texts(run_copy)
    assert "Phase idle-host: the wait histogram is empty" in md
    assert "not drawn** — no phase has timed contended waits" in md
    assert s["phases"]["idle-host"]["status"] == "empty"
    assert s["phases"]["idle-host"]["wait_p50_cycles"] is None
    # as the guest prints it: no bucket rows, only overflow and uncontended
    assert ("of all acquisitions\noverflow                 0    0.00\nuncontended            180  100.00\n"
            in open(run_copy / "table.txt").read())


def test_partial_run(run_copy):
    os.remove(run_copy / "snapshots" / "host-load-r2.json")
    edit_json(run_copy / "status.json", lambda d: d.update(state="partial", reason="the VM died in host-load r2",
                                                            done=[["idle-host", 1], ["host-load", 1], ["idle-host", 2]]))
    p = run_executable(run_copy)  # the real executable, as make run calls it
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.strip() == str(run_copy / "report.html")
    md, html, s = report_texts(run_copy)
    assert "The run is partial: the VM died in host-load r2." in md
    assert "Phase host-load: repetition(s) 2 of 2 missing." in md
    assert "Run state: partial" in html
    assert s["state"] == "partial" and s["phases"]["host-load"]["repetitions"] == [1]
    assert s["phases"]["host-load"]["throughput"]["low"] is None  # one repetition: no interval
    assert "— (one repetition)" in md


def test_broken_snapshot_and_timeline_are_reported(run_copy):
    edit_json(run_copy / "snapshots" / "idle-host-r2.json",
              lambda d: d["cpus"][0]["classes"]["lockbench.0"].update(wait_hist={"64": 1}))
    (run_copy / "timeline.csv").write_text("vcpu,state\n0,on\n")
    (run_copy / "clock.json").unlink()
    p = run_tool(run_copy)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    md, _, s = report_texts(run_copy)
    assert ("snapshots/idle-host-r2.json: cpus[0].classes['lockbench.0']: 'wait_hist' has bucket '64', "
            "expected 0 .. 63 — this snapshot is left out") in md
    assert "timeline.csv: missing column(s) tid, start_host_tsc, end_host_tsc, phase, rep" in md
    assert "Phase idle-host: repetition(s) 2 of 2 missing." in md
    assert "No host timeline" in md
    assert s["phases"]["host-load"]["lhp"]["from_timeline"] == 0


def test_invariant_violation_is_stated(run_copy):
    # the sum is 49: one acquisition more is a record in flight (tests/test_invariant.py), two are broken
    edit_json(run_copy / "snapshots" / "idle-host-r1.json",
              lambda d: d["cpus"][1]["classes"]["lockbench.0"].update(acquisitions=51))
    assert run_tool(run_copy).returncode == 0
    md, _, _ = report_texts(run_copy)
    assert "idle-host-r1.json: CPU 1 class lockbench.0: invariant broken: uncontended 46 + waits 3 + overflow 0" in md


def test_unusable_directory_is_a_clear_error(run_copy, tmp_path):
    (run_copy / "meta.json").unlink()
    p = run_executable(run_copy)
    assert p.returncode == 2 and "meta.json is missing" in p.stderr and "Traceback" not in p.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "meta.json").write_text('{"format": 2, "phases": ["a"], "repetitions": 1}')
    p = run_tool(bad)
    assert p.returncode == 2 and "meta.json: format 2 is not supported" in p.stderr
    (bad / "meta.json").write_text('{"format": 1, "phases": [], "repetitions": 1}')
    assert "field 'phases' must be a non-empty list" in run_tool(bad).stderr
    p = run_tool(tmp_path / "nope")
    assert p.returncode == 2 and "no such results directory" in p.stderr


def trace_object(rep, lost=0, log_lost=0):
    cpus = [{"cpu": k, "loss": {"events_attempted": 10 + lost * k, "events_written": 10, "events_lost": lost * k,
                                "buffers_written": 3, "log_buffers_lost": log_lost * k, "realtime_buffers_lost": 0}}
            for k in (0, 1)]
    total = {key: sum(x["loss"][key] for x in cpus) for key in cpus[0]["loss"]}
    return {"file": f"snapshots/host-load-r{rep}.trace", "session_id": rep, "enable_flags": "long-wait",
            "buffer_size": 65536, "minimum_buffers": 4, "maximum_buffers": 64, "flush_timer_ms": 100,
            "logger_mode": "real-time", "profile_interval": 1, "buffers_per_cpu": 64, "events": 20, "buffers": 6,
            "damaged_frames": 0, "counters_found": True, "loss": total, "cpus": cpus}


def test_trace_losses_are_counted_and_stated(run_copy):
    # r1: 4 events lost (a count of missing long waits); r2: whole buffers lost (a number unknown).
    def traced(rep, lost, log_lost):
        def edit(d):
            d["trace"] = trace_object(rep, lost, log_lost)
            d["long_waits_dropped"] = d["trace"]["loss"]["events_lost"]
        return edit
    edit_json(run_copy / "snapshots" / "host-load-r1.json", traced(1, 4, 0))
    edit_json(run_copy / "snapshots" / "host-load-r2.json", traced(2, 0, 2))
    p = run_tool(run_copy)
    assert p.returncode == 0, p.stderr
    md, html, s = report_texts(run_copy)
    t = s["phases"]["host-load"]["trace"]
    assert t["repetitions"] == [1, 2]
    assert t["loss"]["events_lost"] == 4 and t["loss"]["log_buffers_lost"] == 2
    assert [r["rep"] for r in t["per_repetition"]] == [1, 2]
    assert s["phases"]["idle-host"]["trace"] is None
    assert s["phases"]["host-load"]["lhp"]["dropped"] == 4
    assert any("host-load-r1.json: 4 long wait(s) are missing" in x for x in s["problems"])
    assert any("host-load-r2.json: the trace lost whole buffers (LogBuffersLost 2" in x for x in s["problems"])
    assert "| host-load | 7 | ≥ 4 (buffers lost) |" in md


def test_trace_loss_invariant_broken_is_named(run_copy):
    def broken(d):
        d["trace"] = trace_object(1)
        d["trace"]["cpus"][1]["loss"]["events_written"] = 9
    edit_json(run_copy / "snapshots" / "host-load-r1.json", broken)
    p = run_tool(run_copy)
    assert p.returncode == 0, p.stderr
    md, html, s = report_texts(run_copy)
    assert any("host-load-r1.json: trace.cpus[1].loss: events_written + events_lost != events_attempted (9 + 0 != 10)"
               in x for x in s["problems"]), s["problems"]
