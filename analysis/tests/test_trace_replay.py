"""The trace state machine (spinlab_report.trace_replay) on the hand-made trace
traces/state_machine.txt, written by the real writer (build/host/bin/trace_script) and read
through the CTF export with python3-bt2. Every expected number below is worked out by hand from
the script's comment. Needs `make host`."""
import os
import subprocess

import pytest

from spinlab_report import trace_replay

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "..", "build", "host", "bin")


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("trace") / "sm.trace")
    subprocess.run([os.path.join(BIN, "trace_script"), os.path.join(HERE, "traces", "state_machine.txt"), out],
                   check=True)
    return out


@pytest.fixture(scope="module")
def result(trace_file):
    return trace_replay.replay(trace_file, long_wait=1000)


def test_process_and_thread_table(result):
    assert [(t["thread_id"], t["process_id"], t["name"], t["start"], t["end"]) for t in result.threads] == [
        (10, 1, "init", None, None), (11, 2, "worker", None, None), (12, 2, "helper", None, None),
        (13, 2, "late", 8000, 9000)]
    assert [(p["process_id"], p["parent_id"], p["name"], p["start"], p["end"], p["exit_code"])
            for p in result.processes] == [
        (1, 0, "initproc", None, None, None), (2, 1, "app", None, None, None), (3, 2, "child", 8600, 9600, 7)]


def test_cpu_use_exact_and_sampled(result):
    assert (result.start, result.end, result.cpus, result.tsc_hz) == (0, 10000, 2, 10**9)
    rows = {r["thread_id"]: (r["exact_cycles"], r["exact_share"], r["samples"], r["sampled_share"])
            for r in result.cpu_use_threads}
    assert rows == {0: (6100, 0.305, 6, 0.3), 10: (3000, 0.15, 3, 0.15), 11: (8900, 0.445, 9, 0.45),
                    12: (2000, 0.1, 2, 0.1)}
    procs = {p["process_id"]: (p["exact_cycles"], p["samples"]) for p in result.cpu_use_processes}
    assert procs == {1: (3000, 3), 2: (10900, 11)}
    assert [(c["cpu"], c["exact_idle_share"], c["sampled_idle_share"]) for c in result.cpu_idle] == [
        (0, 0.31, 0.3), (1, 0.3, 0.3)]


def test_syscall_latency(result):
    assert result.syscalls == [{"number": 3, "count": 3, "p50": 500, "p99": 1000, "max": 1000},
                               {"number": 5, "count": 1, "p50": 2000, "p99": 2000, "max": 2000}]


def test_top_locks_and_call_sites(result):
    assert [(r["lock_address"], r["events"], r["contended"], r["total_wait"], r["max_wait"], r["class_id"])
            for r in result.top_locks] == [(0xA000, 2, 2, 3100, 3000, 1), (0xB000, 3, 1, 50, 50, 2)]
    assert [(r["call_site"], r["total_wait"]) for r in result.top_call_sites] == [(0xA1, 3100), (0xB1, 50)]


def test_wakes_delays_and_chains(result):
    assert {(e["waker"], e["wakee"]): e["count"] for e in result.wake_edges} == {(11, 12): 1, (0, 11): 1, (12, 10): 1}
    assert result.wake_delays == [1000, 500, 400]
    assert result.wake_chains == [{"at": 6000, "chain": [11, 12, 10]}]


def test_long_wait_and_the_holders_cpu(result):
    (w,) = result.long_waits
    assert (w["cpu"], w["waiter"], w["holder_cpu"], w["holder_thread"], w["wait_cycles"]) == (1, 11, 0, 12, 3000)
    assert (w["holder_running"], w["other_thread"], w["idle"]) == pytest.approx((0.3, 1 / 3, 1100 / 3000))
    assert w["host_off"] is None and w["verdict"] == "idle"


def test_long_wait_off_cpu_on_the_host(trace_file):
    offset = 1_000_000
    clock = {"format": 1, "offset_cycles": offset, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10.0,
             "points": [[0, offset, 5.0], [20000, offset, 5.0]]}
    timeline = [{"vcpu": 0, "tid": 1, "state": "on", "start_host_tsc": offset, "end_host_tsc": offset + 5500},
                {"vcpu": 0, "tid": 1, "state": "off", "start_host_tsc": offset + 5500, "end_host_tsc": offset + 7900},
                {"vcpu": 0, "tid": 1, "state": "on", "start_host_tsc": offset + 7900, "end_host_tsc": offset + 10000}]
    r = trace_replay.replay(trace_file, long_wait=1000, timeline=timeline, clock=clock)
    (w,) = r.long_waits
    assert w["host_off"] == pytest.approx(0.8)
    assert w["verdict"] == "off-CPU on the host"


def test_report_trace_section_of_one_trace(trace_file, tmp_path):
    tool = os.path.join(HERE, "..", "spinlab-report")
    r = subprocess.run(["/usr/bin/python3", tool, "--trace", trace_file, "--out", str(tmp_path / "rep")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    md = open(tmp_path / "rep" / "report.md").read()
    for header in ("| thread | process | name |", "| process | parent | name |", "| CPU | idle (exact) |",
                   "| system call | count | p50 | p99 | max |", "top 10 locks by total wait", "| waker (0: interrupt) |",
                   "| long wait at |"):
        assert header in md, header
    assert "| 11 | 2 | worker | 8900 | 44.5% | 9 | 45.0% |" in md
    assert "| 0xa000 | 1 | 2 | 2 | 3100 | 3000 |" in md
    assert "11 → 12 → 10" in md
    for fig in ("trace_timeline_sm_trace", "wake_cdf_sm_trace"):
        assert os.path.getsize(tmp_path / "rep" / "figures" / (fig + ".png")) > 1000
    r = subprocess.run(["/usr/bin/python3", tool, "--trace", str(tmp_path / "nope.trace")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "nope.trace" in r.stderr
