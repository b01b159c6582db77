"""`spinlab-collect trace export`: CTF 1.8 read back by babeltrace2 and its Python bindings, and
Chrome trace-event JSON checked against the documented format, on traces written from scripts
(traces/*.txt) by the real per-CPU writer and drain. Needs `make host`; no guest."""
import json
import os
import subprocess

import pytest

from trace_export_check import (check_trace_events, ctf_packets, dump, export, make_trace, read_ctf,
                                script_events)

HERE = os.path.dirname(os.path.abspath(__file__))


def script(name):
    return os.path.join(HERE, "traces", name + ".txt")


@pytest.fixture
def trace(tmp_path):
    def make(name):
        return make_trace(script(name), str(tmp_path / (name + ".trace")))
    return make


def ctf(trace_file, tmp_path, *extra):
    out = str(tmp_path / "ctf")
    r = export(trace_file, "ctf", out, *extra)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return out


def expected_value(text, current):
    if isinstance(current, str):
        return text
    if isinstance(current, list):
        return [int(x, 0) for x in text.split(",")]
    return int(text, 0)


def test_ctf_events_and_fields_equal_the_native_trace(trace, tmp_path):
    t = trace("all_types")
    want = script_events(script("all_types"))
    native, counters = dump(t)
    out = ctf(t, tmp_path)
    got = read_ctf(out)
    events = got["events"]
    assert len(events) == len(want) == len(native)
    assert sum(c["events_written"] for c in counters.values()) == len(events)
    assert got["discarded_events"] == [] and got["discarded_packets"] == []
    key = lambda e: (e["tsc"], e["cpu"])  # noqa: E731
    events.sort(key=key)
    want.sort(key=key)
    assert [(e["tsc"], e["cpu"], e["tid"], e["pid"], e["name"]) for e in events] == sorted(native, key=lambda n: n[:2])
    for e, w in zip(events, want):
        assert (e["name"], e["cpu"], e["tsc"], e["tid"], e["pid"]) == \
            (w["name"], w["cpu"], w["tsc"], w["tid"], w["pid"])
        for k, v in e["fields"].items():
            if k in w["fields"]:
                assert v == expected_value(w["fields"][k], v), (e["name"], k)
            else:  # unset in the script: zero
                assert v in (0, "") or v == [0] * len(v), (e["name"], k, v)
        assert set(w["fields"]) <= set(e["fields"]), e["name"]
    # One packet per buffer after an empty one at the session start, numbered in order, each
    # spanning its events.
    packets = ctf_packets(out)
    assert len(packets[0]) >= 4 and len(packets[1]) >= 4
    for cpu, rows in packets.items():
        assert [p["seq"] for p in rows] == list(range(len(rows)))
        assert rows[0]["bytes"] == 60 and rows[0]["begin"] == rows[0]["end"] == 1000  # session start
        assert all(p["cpu"] == cpu and p["discarded"] == 0 for p in rows)
        mine = [e["tsc"] for e in events if e["cpu"] == cpu]
        assert rows[1]["begin"] == min(mine) and rows[-1]["end"] == max(mine)
        assert all(a["end"] <= b["begin"] for a, b in zip(rows, rows[1:]))
    names = {e["name"] for e in events}
    assert len(names) == 21, names


def test_babeltrace2_prints_every_event_without_warnings(trace, tmp_path):
    t = trace("all_types")
    r = subprocess.run(["babeltrace2", ctf(t, tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(script_events(script("all_types")))
    assert not any("WARNING" in x for x in lines)
    spin = next(x for x in lines if "spinlock:" in x and "class_id = 3" in x)
    assert "wait_cycles = 400" in spin and "spin_count = 17" in spin and "cpu_id = 1" in spin
    assert any('name = "worker-a"' in x for x in lines)


def test_lost_events_are_discarded_events_messages(trace, tmp_path):
    t = trace("loss")
    _, counters = dump(t)
    got = read_ctf(ctf(t, tmp_path))
    lost = {c: v["events_lost"] for c, v in counters.items()}
    assert lost[0] > 100 and lost[1] > 0  # the script made both CPUs lose events
    by_cpu = {}
    for cpu, n in got["discarded_events"]:
        by_cpu[cpu] = by_cpu.get(cpu, 0) + n
    assert by_cpu == lost
    assert {c: rows[-1]["discarded"] for c, rows in ctf_packets(str(tmp_path / "ctf")).items()} == lost
    assert len(got["events"]) == sum(v["events_written"] for v in counters.values())


def test_overwritten_buffers_are_discarded_packets(trace, tmp_path):
    t = trace("circular")
    _, counters = dump(t)
    got = read_ctf(ctf(t, tmp_path))
    overwritten = {c: v["log_buffers_lost"] for c, v in counters.items()}
    assert min(overwritten.values()) > 3
    by_cpu = {}
    for cpu, n in got["discarded_packets"]:
        by_cpu[cpu] = by_cpu.get(cpu, 0) + n
    assert by_cpu == overwritten
    # The newest events survive, the last one last.
    last = max(e["tsc"] for e in got["events"] if e["cpu"] == 0)
    assert last == 10000 + 999 * 100


def clock_json(path, offset, drift_points=(), host_tsc_hz=10**9):
    pts = [[0, offset, 100.0], [10**9, offset, 100.0], *drift_points]
    rate = {"host_tsc_hz": host_tsc_hz} if host_tsc_hz else {}
    json.dump({"format": 1, "method": "bracket-envelope", "offset_cycles": offset, "drift_ppm": 0.0, **rate,
               "ref_guest_tsc": 0, "bound_max_cycles": 100.0, "bound_median_cycles": 100.0,
               "samples": 2, "samples_taken": 2, "rejected": {"unordered": 0, "wide": 0, "late": 0},
               "residual_cycles": 0.0, "max_bracket_cycles": 700, "points": pts}, open(path, "w"))
    return path


def test_ctf_clock_class_carries_the_offset_to_host_time(trace, tmp_path):
    t = trace("sched")
    offset = 5_000_000_123  # host TSC runs 5.000000123 s ahead of the guest's
    clock = clock_json(str(tmp_path / "clock.json"), offset)
    got = read_ctf(ctf(t, tmp_path, "--clock", clock))
    for e in got["events"]:  # 1 GHz: a cycle is a nanosecond
        assert e["ns"] == e["tsc"] + offset
    plain = read_ctf(ctf(t, tmp_path))
    assert [e["ns"] for e in plain["events"]] == [e["tsc"] for e in plain["events"]]


def test_ctf_clock_puts_the_first_event_at_its_host_time_at_the_hosts_rate(trace, tmp_path):
    # Host TSC at 1.25 GHz, guest at 1 GHz: the first event (guest 1000, host 1000 + offset)
    # reads as (1000 + offset) / 1.25 GHz; the rest follow at the guest's rate (guest cycles).
    t = trace("sched")
    offset = 5_000_000_000
    clock = clock_json(str(tmp_path / "clock.json"), offset, host_tsc_hz=1_250_000_000)
    events = sorted(read_ctf(ctf(t, tmp_path, "--clock", clock))["events"], key=lambda e: e["tsc"])
    first = events[0]["tsc"]
    at = (first + offset) * 1e9 / 1.25e9
    for e in events:
        assert abs(e["ns"] - (at + (e["tsc"] - first))) <= 1, (e["tsc"], e["ns"])


def test_perfetto_json_has_guest_and_host_tracks_on_one_axis(trace, tmp_path):
    t = trace("sched")
    offset = 2_000_000
    clock = clock_json(str(tmp_path / "clock.json"), offset)
    timeline = tmp_path / "timeline.csv"
    timeline.write_text("vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep\n"
                        f"0,900,on,{offset + 5000},{offset + 15000},p,1\n"
                        f"0,900,off,{offset + 15000},{offset + 18000},p,1\n"
                        f"0,900,on,{offset + 18000},{offset + 40000},p,1\n"
                        f"1,901,on,{offset + 5000},{offset + 40000},p,1\n"
                        f"1,901,off,{offset + 90000000},{offset + 90001000},p,1\n")  # outside the trace
    out = str(tmp_path / "t.json")
    r = export(t, "perfetto", out, "--clock", clock, "--timeline", str(timeline))
    assert r.returncode == 0, r.stderr
    doc = json.load(open(out))
    assert check_trace_events(doc) == []
    ev = doc["traceEvents"]
    us = lambda guest: (guest + offset) / 1000.0  # 1 GHz, microseconds  # noqa: E731
    # Threads per CPU from the context switches.
    slices = sorted((e["tid"], e["name"], e["ts"], e["dur"]) for e in ev if e["ph"] == "X" and e["pid"] == 1)
    assert slices == [(0, "holder (20)", us(10000), 10.0), (0, "other (22)", us(20000), 10.0),
                      (1, "waiter (21)", us(11000), 20.0)]
    # The wait on the waiter's track, with a flow to the holder's CPU.
    wait = [e for e in ev if e["ph"] == "X" and e["pid"] == 2]
    assert [(w["tid"], w["ts"], w["dur"]) for w in wait] == [(21, us(11000 + 2000), 2.0)] \
        or [(w["tid"], w["ts"], w["dur"]) for w in wait] == [(21, us(13000 - 2000), 2.0)]
    s = next(e for e in ev if e["ph"] == "s")
    f = next(e for e in ev if e["ph"] == "f")
    assert (s["pid"], s["tid"], s["ts"]) == (2, 21, us(11000))
    assert (f["pid"], f["tid"], f["ts"], f["bp"]) == (1, 0, us(13000), "e")
    # Host intervals on their own tracks, same axis; the one outside the trace is left out.
    host = sorted((e["tid"], e["name"], e["ts"], e["dur"]) for e in ev if e["ph"] == "X" and e["pid"] == 3)
    assert host == [(0, "off", us(15000), 3.0), (0, "on", us(5000), 10.0), (0, "on", us(18000), 22.0),
                    (1, "on", us(5000), 35.0)]
    # Contended waits per second, per class.
    counters = [e for e in ev if e["ph"] == "C"]
    assert counters and any(e["args"].get("class 9") == 100.0 for e in counters)  # 1 in 10 ms
    names = {(e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {n for _, n in names} >= {"guest CPUs", "host vCPUs"}


def perfetto_axis(t, tmp_path, clock):
    timeline = tmp_path / "timeline.csv"
    timeline.write_text("vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep\n"
                        "0,900,off,2005000,2015000,p,1\n")
    out = str(tmp_path / "axis.json")
    r = export(t, "perfetto", out, "--clock", clock, "--timeline", str(timeline))
    return r, (json.load(open(out)) if r.returncode == 0 else None)


def test_perfetto_puts_host_time_at_the_hosts_rate_not_the_guests(trace, tmp_path):
    # The trace's (guest's) TSC Hz is 1 GHz; the host's TSC runs at 1.25 GHz. Every timestamp is
    # host TSC / 1.25 GHz: the wait (guest 11000..13000 cycles, offset 2 M) and the host's off
    # interval alike. Put on the guest's rate instead, both would be 25 % late.
    t = trace("sched")
    offset, host_hz = 2_000_000, 1_250_000_000
    r, doc = perfetto_axis(t, tmp_path, clock_json(str(tmp_path / "clock.json"), offset, host_tsc_hz=host_hz))
    assert r.returncode == 0, r.stderr
    assert doc["otherData"]["axis_tsc_hz"] == host_hz and doc["otherData"]["tsc_hz"] == 10**9
    us = lambda host_tsc: host_tsc * 1e6 / host_hz  # noqa: E731
    wait = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 2)
    assert wait["ts"] == pytest.approx(us(11000 + offset), abs=1e-6)
    assert wait["dur"] == pytest.approx(us(2000), abs=1e-6)
    off = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 3)
    assert (off["ts"], off["dur"]) == (pytest.approx(us(2005000), abs=1e-6), pytest.approx(us(10000), abs=1e-6))


def test_perfetto_takes_the_host_rate_from_meta_json_or_says_it_has_none(trace, tmp_path):
    # A clock.json written before it stated host_tsc_hz: the results directory's meta.json beside
    # it gives the rate; with neither, the export fails naming what is missing.
    t = trace("sched")
    clock = clock_json(str(tmp_path / "clock.json"), 2_000_000, host_tsc_hz=None)
    r, _ = perfetto_axis(t, tmp_path, clock)
    assert r.returncode != 0 and "host_tsc_hz" in r.stderr, r.stderr
    json.dump({"format": 1, "host": {"tsc_hz": 2 * 10**9}}, open(tmp_path / "meta.json", "w"))
    r, doc = perfetto_axis(t, tmp_path, clock)
    assert r.returncode == 0, r.stderr
    assert doc["otherData"]["axis_tsc_hz"] == 2 * 10**9
    off = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 3)
    assert off["ts"] == pytest.approx(2005000 / 2000.0, abs=1e-6)


def test_waits_without_a_thread_get_a_track_per_cpu(trace, tmp_path):
    out = str(tmp_path / "n.json")
    assert export(trace("nothread"), "perfetto", out).returncode == 0
    doc = json.load(open(out))
    assert check_trace_events(doc) == []
    waits = sorted((e["tid"], e["ts"]) for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 2)
    assert waits == [(10**9, 1.0), (10**9 + 1, 1.5)]


def test_the_format_check_catches_broken_json():
    assert check_trace_events({"traceEvents": [{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 5}]})
    assert check_trace_events({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5}]})
    assert check_trace_events({"traceEvents": [{"ph": "s", "id": 1, "name": "a", "pid": 1, "tid": 1, "ts": 5}]})
    assert check_trace_events({"traceEvents": [{"ph": "Q", "name": "a", "pid": 1, "tid": 1, "ts": 5}]})
    assert check_trace_events({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
                                               {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 8, "dur": 10}]})


def test_damage_is_named_and_the_rest_exported(trace, tmp_path):
    t = trace("all_types")
    data = open(t, "rb").read()
    cut = str(tmp_path / "cut.trace")
    open(cut, "wb").write(data[:len(data) - 700])  # inside the counters frame or the last buffer
    r = export(cut, "ctf", str(tmp_path / "cut"))
    assert r.returncode == 1 and "cut short" in r.stderr
    assert 0 < len(read_ctf(str(tmp_path / "cut"))["events"]) < len(script_events(script("all_types")))
    r = export(t, "ctf", str(tmp_path / "x"), "--clock", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "missing.json" in r.stderr
    r = export(t, "svg", str(tmp_path / "y"))
    assert r.returncode == 2 and "--format" in r.stderr
