"""`spinlab-collect trace` against the real kernel (trace sessions).

Boots the kernel under TCG with lockbench on 2 vCPUs through spinlab-vm, then: a start the
guest refuses names the parameter and leaves no session running; `trace record` drains a
session with every group enabled into a trace file, `trace dump` prints its events, and the
file's per-CPU loss counters agree with the guest's (the session is stopped, so exactly); then
QEMU is killed in the middle of a `trace record` and every whole buffer before the kill is
still readable. A short recording is also exported (trace export) to CTF, read back with
babeltrace2, and to Chrome trace-event JSON. Needs `make build` and root for /dev/shm; TCG.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import trace_export_check as tx
from real_guest import COLLECT, lockbench_guest


@pytest.fixture(scope="module")
def guest():
    with lockbench_guest("tr") as g:
        deadline = time.time() + 120
        while collect(g, "trace", "status", check=False).returncode != 0:  # still booting
            assert time.time() < deadline, "the guest never answered"
            time.sleep(0.5)
        yield g


def collect(g, *args, check=True, timeout=120):
    r = subprocess.run([COLLECT, *args, "--vm", g["name"], "--run-dir", g["run_dir"],
                        "--timeout", "20000"],
                       env=g["env"], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"spinlab-collect {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


def dump(path):
    r = subprocess.run([COLLECT, "trace", "dump", path], capture_output=True, text=True, timeout=120)
    return r


def status(g):
    out = collect(g, "trace", "status").stdout
    return {m.group(1).strip(): m.group(2) for m in re.finditer(r"^(\w[\w ]*?)\s{2,}(\S+)", out, re.M)}


def test_refused_start_names_the_parameter(guest):
    r = collect(guest, "trace", "start", "--buffer-size", "5000", check=False)
    assert r.returncode == 2 and "BufferSize" in r.stderr
    # Valid here, refused by the guest: 1000 buffers of 1 MiB per CPU do not fit.
    r = collect(guest, "trace", "start", "--buffer-size", "1048576", "--min-buffers", "1000",
                "--max-buffers", "1000", check=False)
    assert r.returncode == 1
    assert "STATUS_INVALID_PARAMETER" in r.stderr and "MinimumBuffers" in r.stderr
    assert status(guest)["state"] != "running"


def test_record_then_dump_with_exact_counters(guest):
    out = os.path.join(guest["run_dir"], "all.trace")
    collect(guest, "trace", "record", "--enable", "all", "--duration", "4", "--flush-timer", "50",
            "-o", out)
    r = dump(out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    events = [l for l in lines if not l.startswith("#")]
    types = {l.split()[4] for l in events}
    for t in ("spinlock", "cswitch", "ready", "syscall-enter", "syscall-exit", "profile",
              "thread-rundown", "sysconfig"):
        assert t in types, f"no {t} event in {sorted(types)}"
    assert all(int(l.split()[1].split("=")[1]) in (0, 1) for l in events)  # cpu=0|1
    # The counters frame per CPU, and the guest's totals: the same, since the session stopped.
    per_cpu = [dict(kv.split("=") for kv in l.split()[3:]) for l in lines if l.startswith("# cpu ")]
    assert len(per_cpu) == 2
    written = sum(int(c["events_written"]) for c in per_cpu)
    lost = sum(int(c["events_lost"]) for c in per_cpu)
    for c in per_cpu:
        assert int(c["events_written"]) + int(c["events_lost"]) == int(c["events_attempted"])
    s = status(guest)
    assert s["state"] == "stopped"
    assert int(s["EventsLost"]) == lost
    assert int(s["BuffersWritten"]) == sum(int(c["buffers_written"]) for c in per_cpu)
    # Real-time mode, everything drained: every event written is in the file.
    assert len(events) == written, f"{len(events)} events dumped, {written} written, {lost} lost"


def test_export_of_a_real_trace_reads_back_in_babeltrace2_and_perfetto(guest):
    """trace export on a real recording: babeltrace2 reads every event with the native values,
    losses (if any) as discarded events, and the Chrome JSON follows the documented format."""
    out = os.path.join(guest["run_dir"], "export.trace")
    collect(guest, "trace", "record", "--enable", "all", "--duration", "2", "--flush-timer", "50", "-o", out)
    native, counters = tx.dump(out)
    ctf_dir = os.path.join(guest["run_dir"], "export.ctf")
    r = tx.export(out, "ctf", ctf_dir)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = tx.read_ctf(ctf_dir)
    assert sorted((e["tsc"], e["cpu"], e["tid"], e["pid"], e["name"]) for e in got["events"]) == sorted(native)
    lost = {}
    for cpu, n in got["discarded_events"]:
        lost[cpu] = lost.get(cpu, 0) + n
    assert {c: v for c, v in lost.items() if v} == {c: v["events_lost"] for c, v in counters.items() if v["events_lost"]}
    # Field values: the spinlock events as trace dump prints them.
    dumped = subprocess.run([COLLECT, "trace", "dump", out], capture_output=True, text=True, timeout=120).stdout
    want = sorted((int(m[1]), int(m[2]), int(m[3], 16), int(m[4]), int(m[5]))
                  for m in re.finditer(r"^(\d+) cpu=(\d+) .* spinlock lock=0x([0-9a-f]+) .* wait=(\d+) spins=(\d+)",
                                       dumped, re.M))
    assert want and sorted((e["tsc"], e["cpu"], e["fields"]["lock_address"], e["fields"]["wait_cycles"],
                            e["fields"]["spin_count"]) for e in got["events"] if e["name"] == "spinlock") == want
    text = subprocess.run(["babeltrace2", ctf_dir], capture_output=True, text=True, timeout=300)
    assert text.returncode == 0 and text.stderr == "", text.stderr
    others = [line for line in text.stdout.splitlines() if not line.startswith("[")]
    assert len(text.stdout.splitlines()) - len(others) == len(native)
    assert all("discarded" in line for line in others if line.strip()), others[:3]
    js = os.path.join(guest["run_dir"], "export.json")
    r = tx.export(out, "perfetto", js)
    assert r.returncode == 0, r.stderr
    doc = json.load(open(js))
    assert tx.check_trace_events(doc) == []
    cpus = {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    assert cpus == {0, 1}, "thread slices on both CPUs from the context switches"


def test_record_keeps_every_whole_buffer_when_the_vm_dies(guest):
    out = os.path.join(guest["run_dir"], "killed.trace")
    rec = subprocess.Popen([COLLECT, "trace", "record", "--vm", guest["name"], "--run-dir",
                            guest["run_dir"], "--timeout", "20000", "--enable", "all", "--flush-timer", "20", "-o", out],
                           env=guest["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    time.sleep(4)
    os.kill(guest["state"]["qemu_pid"], signal.SIGKILL)  # the VM dies mid-record
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 5, f"record should say the guest went away: {err}"
    r = dump(out)
    assert r.returncode == 0, r.stderr  # every frame whole
    events = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert len(events) > 100, f"only {len(events)} events kept; stderr: {err}"
