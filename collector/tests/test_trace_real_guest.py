"""`spinlab-collect trace` against the real kernel (trace sessions).

Boots the kernel under TCG with lockbench on 2 vCPUs through spinlab-vm, then: a start the
guest refuses names the parameter and leaves no session running; `trace record` drains a
session with every group enabled into a trace file, `trace dump` prints its events, and the
file's per-CPU loss counters agree with the guest's (the session is stopped, so exactly); then
QEMU is killed in the middle of a `trace record` and every whole buffer before the kill is
still readable. Needs `make build` and root for /dev/shm; TCG, no KVM needed.
"""
import os
import re
import signal
import subprocess
import time

import pytest

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
