"""The user-mode logger against the real kernel: every event lockbench sampled is in the file.

Boots the kernel under TCG, 2 vCPUs, with lockbench as init in timed rounds (two threads, one
lock, the default parameters: every contended acquisition and one uncontended in 1,000 is an
event). Its ring-3 locks write their spinlock events into each thread's ring (TraceUserRing,
plain stores), and the kernel takes the rings into the CPUs' trace buffers. lockbench prints,
for each round, how many events its threads sampled and the round's window on the boot clock
(the trace's timestamps), and since its start how each event went (ring or system call) and
the rings' counts as the kernel keeps them (written, lost, rejected, discarded).

A `trace record` of the spinlock group runs across several rounds. For every round wholly
inside the session, the file's spinlock events of lockbench's lock classes stamped in the
round's window, plus the events the session counted lost, must be what lockbench sampled; with
nothing lost, exactly. Every event went through a ring (no system call per event), the kernel
rejected none, and each record carries the kernel's header (its thread, the process, the CPU).
Needs `make build` and root for /dev/shm; about 25 s.
"""
import os
import re
import struct
import subprocess
import time

import pytest

from real_guest import COLLECT, lockbench_guest

ROUND_MS = 400
PAUSE_MS = 700


@pytest.fixture(scope="module")
def guest():
    with lockbench_guest("ur", "", f"--rounds 0 --duration-ms {ROUND_MS} --pause-ms {PAUSE_MS} --locks 1") as g:
        yield g


def console(g):
    with open(os.path.join(g["run_dir"], "vm", g["name"], "console.log"), errors="replace") as f:
        return f.read().replace("\r", "")


# spinlab/trace.h: TraceFileHeader (32 bytes, then TraceSessionInformation: start_tsc at 0x40,
# stop_tsc at 0x48 of it); frames TraceFrameHeader {magic, kind, length, crc}; a buffer frame is
# TraceBufferHeader (64 bytes) + events; TraceEventHeader {size, type, cpu, flags, thread_id,
# process_id, tsc}; TraceSpinlockEvent's class_id at byte 88, rules at 101.
FRAME = struct.Struct("<IIII")
EVENT = struct.Struct("<HHHHIIQ")
FRAME_MAGIC, KIND_BUFFER, KIND_COUNTERS, SPINLOCK, SYSCONFIG = 0x4D415246, 1, 2, 1, 15


def read_trace(path):
    """(session start, stop, [(tsc, cpu, thread, process, class, rules)] of the spinlock events,
    events lost per the counters frame), straight from the file's bytes. The header holds the
    session as it was when the recording began (no stop yet); the stop is the configuration
    event the stopping CPU writes before every CPU disarms."""
    data = open(path, "rb").read()
    start, stop = struct.unpack_from("<Q", data, 32 + 0x40)[0], 0
    off = struct.unpack_from("<I", data, 12)[0]
    events, lost = [], None
    while off + FRAME.size <= len(data):
        magic, kind, length, _ = FRAME.unpack_from(data, off)
        assert magic == FRAME_MAGIC, f"{path}: no frame at byte {off}"
        body = off + FRAME.size
        if kind == KIND_BUFFER:
            used = struct.unpack_from("<I", data, body + 20)[0]
            e = body + 64
            while e < body + used:
                size, typ, cpu, _, tid, pid, tsc = EVENT.unpack_from(data, e)
                if typ == SYSCONFIG:
                    stop = tsc
                if typ == SPINLOCK:
                    cls = struct.unpack_from("<I", data, e + 88)[0]
                    events.append((tsc, cpu, tid, pid, cls, data[e + 101]))
                e += size
        elif kind == KIND_COUNTERS:  # TraceCpuCounters: cpu, reserved, then the six counters
            lost = sum(struct.unpack_from("<Q", data, body + i * 56 + 8 + 16)[0] for i in range(length // 56))
        off = body + length
    return start, stop, events, lost


def test_every_sampled_event_of_lockbench_is_in_the_file(guest):
    # Wait for a round's trace line: lockbench runs and the session parameters are the defaults.
    deadline = time.time() + 60
    while "trace round" not in console(guest) and "round 2 start" not in console(guest):
        assert time.time() < deadline, "lockbench printed no round"
        time.sleep(0.2)
    out = os.path.join(guest["run_dir"], "ring.trace")
    r = subprocess.run([COLLECT, "trace", "record", "--enable", "spinlock", "--duration", "4",
                        "--max-buffers", "256", "-o", out, "--vm", guest["name"],
                        "--run-dir", guest["run_dir"], "--timeout", "20000"],
                       env=guest["env"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    start, stop, events, lost = read_trace(out)
    assert stop > start and lost is not None
    # The rounds that ended after the session stopped have printed by now (a round is 0.4 s).
    time.sleep(2 * (ROUND_MS + PAUSE_MS) / 1000)
    text = console(guest)
    classes = {int(c) for c in re.findall(r"^lockbench: round \d+: class user\d+ \(id (\d+)\)", text, re.M)}
    assert classes, text[-2000:]
    rounds = [(int(n), int(s), int(a), int(b)) for n, s, a, b in re.findall(
        r"^lockbench: round (\d+): trace round: (\d+) events sampled, clock (\d+)\.\.(\d+)$", text, re.M)]
    inside = [x for x in rounds if x[2] >= start and x[3] <= stop]
    assert len(inside) >= 2, f"rounds wholly inside the session: {inside} (session {start}..{stop}, {rounds})"
    mine = [e for e in events if e[4] in classes]
    assert mine, "no spinlock event of lockbench's classes in the file"
    pids = {e[3] for e in mine}
    assert len(pids) == 1 and 0 not in pids, f"process ids of lockbench's events: {pids}"
    assert all(e[2] != 0 and e[1] in (0, 1) and e[5] != 0 for e in mine)  # the kernel's header
    for n, sampled, a, b in inside:
        in_file = sum(1 for e in mine if a <= e[0] <= b)
        if lost == 0:
            assert in_file == sampled, f"round {n}: {in_file} events in the file, lockbench sampled {sampled}"
        else:
            assert in_file <= sampled <= in_file + lost, f"round {n}: {in_file} in the file + {lost} lost vs {sampled}"
        assert sampled > 0, f"round {n} sampled nothing"
    # Every event went through a ring, and the kernel took every record it was given as written.
    last = re.findall(r"^lockbench: round \d+: trace: (\d+) events sampled, (\d+) through rings, (\d+) by system "
                      r"call; rings: (\d+) full, (\d+) drains asked; kernel took (\d+) written, (\d+) lost, "
                      r"(\d+) rejected, (\d+) discarded$", text, re.M)[-1]
    sampled, via_ring, via_syscall, full, _, written, ring_lost, rejected, _ = map(int, last)
    assert via_syscall == 0 and via_ring == sampled - full, last
    assert rejected == 0, last
    print(f"user ring: {len(inside)} rounds inside the session, {sum(x[1] for x in inside)} events sampled in them, "
          f"{len(mine)} of lockbench's in the file, {lost} lost; since the start {sampled} sampled, "
          f"{written} written, {ring_lost} lost by the rings")
