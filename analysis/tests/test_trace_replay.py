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
    return trace_replay.replay(trace_file, long_wait_threshold=1000)


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
    r = trace_replay.replay(trace_file, long_wait_threshold=1000, timeline=timeline, clock=clock)
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


def _brute_long_waits(switches, waits, cpus, start, end, long_wait):
    """The definition, one wait and one interval at a time: switches (tsc, cpu, old, new), waits
    (acquire_tsc, wait, holder cpu or 0xFFFFFFFF, flags, rules). Returns per wait (holder thread,
    shares of holder/other/idle/unknown) or None when the holder CPU is not known."""
    runs = {}
    for cpu in range(cpus):
        mine = [s for s in switches if s[1] == cpu]
        iv, since, cur = [], start, (mine[0][2] if mine else None)
        for tsc, _, _, new in mine:
            if tsc > since:
                iv.append((since, tsc, cur))
            since, cur = tsc, new
        if end > since:
            iv.append((since, end, cur))
        runs[cpu] = iv
    out = []
    for b, w, h, flags, rules in waits:
        if not flags & 1 or (w < long_wait and not rules & 8):
            continue
        if h == 0xFFFFFFFF:
            out.append(None)
            continue
        a = b - w
        holder = next((t for s, e, t in runs[h] if s <= a < e), None)
        share = {"holder": 0, "other": 0, "idle": 0, "unknown": 0}
        for s, e, t in runs[h]:
            d = min(e, b) - max(s, a)
            if d > 0:
                share["unknown" if t is None else "idle" if t == 0 else "holder" if t == holder else "other"] += d
        share["unknown"] += max(0, w - sum(share.values()))
        out.append((holder, share["holder"] / w, share["other"] / w, share["idle"] / w, share["unknown"] / w))
    return out


def test_long_waits_in_numpy_match_the_definition():
    """trace_replay's interval arithmetic (searchsorted over each holder CPU's run intervals)
    against the per-wait, per-interval definition, on random switches and waits: holders idle,
    running, switched out mid-wait, a CPU never switched (who ran there is unknown), waits that
    began before the trace."""
    import numpy as np
    from spinlab_report import trace_columns
    rng = np.random.default_rng(7)
    cpus, start, end = 4, 1000, 200_000  # CPU 3 has no context switch
    sw = sorted((int(t), int(rng.integers(3)), 0, int(rng.choice([0, 0, 5, 6, 7])))
                for t in rng.integers(start, end, 120))
    last = {}
    switches = []
    for tsc, cpu, _, new in sw:  # old = what this CPU ran before (the first: random, may be 0)
        switches.append((tsc, cpu, last.get(cpu, int(rng.choice([0, 5]))), new))
        last[cpu] = new
    waits = [(int(b), int(w), int(rng.choice([0, 1, 2, 3, 0xFFFFFFFF])), int(rng.choice([0, 1, 1, 1])),
              int(rng.choice([0, 0, 8]))) for b, w in zip(rng.integers(start, end, 400), rng.integers(1, 30_000, 400))]
    cs = np.array([(t, c, 0, 0, i, o, n) for i, (t, c, o, n) in enumerate(switches)],
                  dtype=[("tsc", "<u8"), ("cpu", "<u4"), ("event_thread_id", "<u4"), ("event_process_id", "<u4"),
                         ("index", "<u8"), ("old_thread_id", "<u4"), ("new_thread_id", "<u4")])
    sp = np.array([(b, k % cpus, 9, 1, 1000 + k, 0xA0, 1, b, w, h, h, f, r) for k, (b, w, h, f, r) in enumerate(waits)],
                  dtype=[("tsc", "<u8"), ("cpu", "<u4"), ("event_thread_id", "<u4"), ("event_process_id", "<u4"),
                         ("index", "<u8"), ("lock_address", "<u8"), ("class_id", "<u4"), ("acquire_tsc", "<u8"),
                         ("wait_cycles", "<u8"), ("holder_cpu_start", "<u4"), ("holder_cpu_end", "<u4"),
                         ("flags", "u1"), ("rules", "u1")])
    edge = np.array([(start, 0, 0, 0, 0), (end, 0, 0, 0, 1)], dtype=[("tsc", "<u8"), ("cpu", "<u4"),
                    ("event_thread_id", "<u4"), ("event_process_id", "<u4"), ("index", "<u8")])
    sp = sp[np.argsort(sp["tsc"], kind="stable")]
    t = trace_columns.TraceColumns(10**9, cpus, 0, {"cswitch": cs, "spinlock": sp, "sysconfig": edge})
    m = trace_replay._Machine(t)
    assert (m.start, m.end) == (start, end)
    got = list(m.long_waits(m.run_intervals(), 5000, None))
    want = _brute_long_waits(switches, [(int(r["acquire_tsc"]), int(r["wait_cycles"]), int(r["holder_cpu_start"]),
                                         int(r["flags"]), int(r["rules"])) for r in sp], cpus, start, end, 5000)
    assert len(got) == len(want) > 100
    verdicts = set()
    for g, w in zip(got, want):
        if w is None:
            assert g["holder_cpu"] is None and g["verdict"] == "holder unknown"
            continue
        assert (g["holder_thread"], g["holder_running"], g["other_thread"], g["idle"], g["unknown"]) == pytest.approx(w)
        verdicts.add(g["verdict"])
    assert {"running the holder", "running another thread", "idle"} <= verdicts
    assert any(g["unknown"] == 1.0 for g in got) and any(0 < (g["unknown"] or 0) < 1 for g in got)
