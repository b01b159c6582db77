"""Trace sessions of a Linux guest (spinlab.region=1 with the control channel; TCG boots).

The agent serves spinlab's trace sessions on the control channel as spinlab's kernel does
(guest/trace.cc over the kernel's locktrace writer), long waits only: the host's unchanged
`spinlab-collect trace record` records them. Judged against the agent's own stream of the same
boot, which carries every wait's start and end by an independent path (the stream is built from
the same pairing, but the trace goes through the session's arming, window, writer, buffers,
the host's drain and the trace file):

- every stream wait of at least 2^20 cycles whose end lies in the session's window
  [start_tsc, stop_tsc] (the guest's own stamps, from the file's header and the session's
  status after the stop) is in the trace exactly once, as a spinlock event on its CPU with its
  lock, acquire_tsc == release_tsc == the wait's end, wait_cycles == end - start, spin count 0,
  no holder (kNoCpu), LHP class unknown, rule long-wait, flags contended | wait-only; nothing
  else is in the trace but one system configuration event (CPU 0, stamped stop_tsc), the
  session's window holds some long waits, each CPU's buffers are all there in sequence, and
  every loss counter is 0;
- a start that asks for a group the agent cannot write (profile; spinlock) is refused, the
  guest says why on its console, and it goes on serving (info, then the session above).

A third boot: spinlab.stream=0 spinlab.seconds=0, the way spinlab-run boots it (the region and
the control port, no waits port): the guest answers `info` and a trace session while its
workload runs until QEMU is killed, and a stream=0 without the region is refused with a
sentence on the console.

Needs build/host/bin/spinlab-collect (make) and the fetched guest image."""
import os
import re
import struct
import subprocess
import threading
import time

import pytest
from linux_testlib import guest_image  # noqa: F401  (a fixture)

from spinlab_linux import boot, fetch, paths

COLLECT = paths.REPO / "build" / "host" / "bin" / "spinlab-collect"
LONG = 1 << 20
NO_CPU = 0xFFFFFFFF
# spinlab/trace.h
FRAME = struct.Struct("<IIII")                 # magic, kind, length, crc
BUFFER = struct.Struct("<QQIIIIQQQQ")          # sequence, session, cpu, bytes_used, event_count,
                                               # flags, first_tsc, last_tsc, events_lost, reserved
HEADER = struct.Struct("<HHHHIIQ")             # size, type, cpu, flags, thread, process, tsc
SPIN = struct.Struct("<8Q3I4B")                # lock, call_site, acquire, release, wait_cycles,
                                               # spin_count, holder/waiter steal; class,
                                               # holder_cpu_start/end; lhp, rules, flags, reserved
SESSION_AT = 32                                # TraceFileHeader.session
FRAME_MAGIC, KIND_BUFFER, KIND_COUNTERS = 0x4D415246, 1, 2
T_SPINLOCK, T_SYSCONFIG = 1, 15
RULE_LONG_WAIT = 1 << 3
SPIN_CONTENDED, SPIN_WAIT_ONLY = 1 << 0, 1 << 3
BUFFER_FINAL = 1 << 1
LHP_UNKNOWN = 4


def collect(*args, timeout=60):
    return subprocess.run([str(COLLECT), *args], capture_output=True, text=True, timeout=timeout)


def read_trace(path):
    """(session start_tsc, {cpu: [buffer headers]}, [(header, payload bytes)], counters)."""
    data = open(path, "rb").read()
    header_size = struct.unpack_from("<I", data, 12)[0]
    start_tsc = struct.unpack_from("<Q", data, SESSION_AT + 0x40)[0]
    off, buffers, events, counters = header_size, {}, [], None
    while off + FRAME.size <= len(data):
        magic, kind, length, _ = FRAME.unpack_from(data, off)
        assert magic == FRAME_MAGIC, f"no frame at byte {off}"
        payload = data[off + FRAME.size:off + FRAME.size + length]
        if kind == KIND_BUFFER:
            b = BUFFER.unpack(payload[:BUFFER.size])
            buffers.setdefault(b[2], []).append(b)
            at = BUFFER.size
            for _ in range(b[4]):
                h = HEADER.unpack_from(payload, at)
                events.append((h, payload[at + HEADER.size:at + h[0]]))
                at += h[0]
            assert at == b[3], f"cpu {b[2]} buffer {b[0]}: events end at {at}, bytes_used {b[3]}"
        elif kind == KIND_COUNTERS:
            counters = payload
        off += FRAME.size + length
    assert off == len(data), f"a frame cut short at byte {off}"
    return start_tsc, buffers, events, counters


def area_session(region):
    """(session_id, start_tsc, stop_tsc) from the trace area's header in the region file (shm.h:
    the section table at 96, the trace section third; TraceAreaHeader.session at 48)."""
    with open(region, "rb") as f:
        f.seek(96 + 3 * 24)
        offset = struct.unpack("<Q", f.read(8))[0]
        f.seek(offset + 48 + 0x38)
        return struct.unpack("<QQQ", f.read(24))


def make_region(path, mb=16):
    with open(path, "wb") as f:
        f.truncate(mb << 20)


def session_files(tmp_path):
    """(the region file, made; the control socket's path; the trace file's) of a traced boot,
    once spinlab-collect is there."""
    if not COLLECT.is_file():
        pytest.fail(f"no {COLLECT}: build the host tools (make) first")
    region, sock, trace = tmp_path / "region", str(tmp_path / "control.sock"), tmp_path / "t.trace"
    make_region(region)
    return region, sock, trace


def wait_for_guest(att, stop, limit=60):
    """Until the guest's channel answers `info` (QEMU makes the socket before the guest boots);
    the last answer."""
    t0, info = time.monotonic(), None
    while not stop.is_set() and time.monotonic() - t0 < limit:
        if os.path.exists(att[1]):
            info = collect("info", *att)
            if info.returncode == 0:
                break
        time.sleep(0.3)
    return info


def test_a_trace_session_records_every_long_wait_of_its_window_exactly(guest_image, tmp_path):
    region, sock, trace = session_files(tmp_path)
    # The ground-truth module's lock held 2 ms at a time on vCPU 1: vCPU 0's waits on it are
    # long (several 2^20 cycles) and steady.
    cfg = boot.GuestConfig(cpus=2, accel="tcg", mode="tas", workload="gt", gt="1,2000,1000,200",
                           seconds=8, region=str(region), control_socket=sock)
    att = ["--socket", sock, "--shm", str(region)]
    got = {}

    def host(stop):
        wait_for_guest(att, stop)
        got["profile"] = collect("trace", "start", *att, "--enable", "profile")
        got["spinlock"] = collect("trace", "start", *att, "--enable", "spinlock,long-wait")
        got["info"] = collect("info", *att)
        got["record"] = collect("trace", "record", *att, "--enable", "long-wait", "--duration", "3",
                                "-o", str(trace))
        got["status"] = collect("trace", "status", *att)

    stop = threading.Event()
    t = threading.Thread(target=host, args=(stop,))
    t.start()
    try:
        res, run = boot.run_guest(cfg, tmp_path / "out")
    finally:
        stop.set()
        t.join()
    console = (tmp_path / "out" / "console.log").read_text(errors="replace")

    # Refused, said why, and served on.
    for key, group in (("profile", "profile"), ("spinlock", "spinlock")):
        r = got[key]
        assert r.returncode == 1 and "INVALID_PARAMETER" in r.stderr, (key, r.stdout, r.stderr)
        assert re.search(rf"trace: refused a session that enables {group}: .*long-wait group alone",
                         console), console
    assert got["info"].returncode == 0, got["info"].stderr
    assert "linux " in got["info"].stdout

    r = got["record"]
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert re.search(r"events_lost=0 buffers_written=\d+ log_buffers_lost=0 realtime_buffers_lost=0",
                     r.stdout), r.stdout
    status = got["status"]
    assert status.returncode == 0 and re.search(r"state\s+stopped", status.stdout), status.stdout
    start_tsc, buffers, events, counters = read_trace(trace)
    # The window: the file's start (as the guest reported it at the start) and the area's stop.
    session_id, area_start, stop_tsc = area_session(region)
    assert session_id == 1 and area_start == start_tsc and 0 < start_tsc < stop_tsc

    # Each CPU's buffers: every one in sequence (the last one is final only when the CPU had
    # events left to publish when it disarmed: the FlushTimer may have published them all).
    for cpu, bufs in buffers.items():
        assert [b[0] for b in bufs] == list(range(len(bufs))), cpu
        assert not any(b[5] & BUFFER_FINAL for b in bufs[:-1]), cpu
        assert all(b[8] == 0 for b in bufs), f"cpu {cpu}: events lost"
    # The file's counters frame (TraceCpuCounters: cpu, reserved, TraceLossCounters): nothing
    # lost anywhere, every attempt written.
    assert counters is not None and len(counters) == 2 * 56, counters
    for at in range(0, len(counters), 56):
        attempted, written, lost, _, log_lost, rt_lost = struct.unpack_from("<6Q", counters, at + 8)
        assert attempted == written and lost == log_lost == rt_lost == 0, (at // 56, attempted, written)

    configs = [(h, p) for h, p in events if h[1] == T_SYSCONFIG]
    assert len(configs) == 1 and configs[0][0][2] == 0 and configs[0][0][6] == stop_tsc, configs
    spins = [(h, SPIN.unpack(p)) for h, p in events if h[1] == T_SPINLOCK]
    assert len(spins) + 1 == len(events), "only spinlock events and the configuration"
    traced = []
    for h, e in spins:
        size, _, cpu, hflags, thread, process, tsc = h
        lock, call_site, acq, rel, cycles, spins_n, hsteal, wsteal, cls, hs, he, lhp, rules, flags, _ = e
        assert (size, hflags, thread, process, call_site, spins_n, hsteal, wsteal, cls) == \
            (104, 0, 0, 0, 0, 0, 0, 0, 0), h
        assert tsc == acq == rel and hs == he == NO_CPU and lhp == LHP_UNKNOWN, e
        assert rules == RULE_LONG_WAIT and flags == SPIN_CONTENDED | SPIN_WAIT_ONLY, e
        traced.append((cpu, lock, acq, cycles))
    expected = sorted((w.cpu, w.lock, w.end, w.end - w.start) for w in run.waits
                      if w.end - w.start >= LONG and start_tsc <= w.end <= stop_tsc)
    assert len(expected) >= 20, f"only {len(expected)} long waits in the session's window"
    assert len(traced) == len(set(traced)), "a wait traced twice"
    assert sorted(traced) == expected, (len(traced), len(expected),
                                        sorted(set(traced) ^ set(expected))[:10])
    assert res["summary"]["lost_events"] == 0


def stream_off_argv(tmp_path, cfg, sock):
    """QEMU's argv for cfg with the region and the control port but no waits port (as
    spinlab-vm boots a guest for spinlab-run)."""
    argv = boot.qemu_argv(cfg, "tcg", str(tmp_path / "unused.sock"), str(tmp_path / "console.log"),
                          "spinlab-stream0", control_socket=sock)
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("-chardev", "-device") and ("id=waits" in argv[i + 1] or "chardev=waits" in argv[i + 1]):
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def guest_cfg(**kw):
    """A GuestConfig with the kernel and initramfs resolved as run_guest resolves them."""
    cfg = boot.GuestConfig(**kw)
    kernel = fetch.load_kernel_json()
    cfg.kernel = fetch.boot_kernel(kernel)
    cfg.initrd = str(paths.initramfs_path())
    return cfg


def test_stream_off_serves_the_channel_and_traces_until_the_vm_is_stopped(guest_image, tmp_path):
    region, sock, trace = session_files(tmp_path)
    cfg = guest_cfg(cpus=2, accel="tcg", mode="tas", workload="gt", gt="1,2000,1000,200",
                    region=str(region), control_socket=sock,
                    append=["spinlab.stream=0", "spinlab.seconds=0"])
    qemu = subprocess.Popen(stream_off_argv(tmp_path, cfg, sock), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    att = ["--socket", sock, "--shm", str(region)]
    try:
        info = wait_for_guest(att, threading.Event())
        assert info is not None and info.returncode == 0, info and info.stderr
        rec = collect("trace", "record", *att, "--enable", "long-wait", "--duration", "3", "-o", str(trace))
        assert rec.returncode == 0, (rec.stdout, rec.stderr)
        assert qemu.poll() is None, "the guest stopped by itself (spinlab.seconds=0 runs until killed)"
    finally:
        qemu.kill()
        qemu.wait()
    console = (tmp_path / "console.log").read_text(errors="replace")
    assert "workload gt until the VM is stopped" in console, console
    _, _, events, _ = read_trace(trace)
    assert any(h[1] == T_SPINLOCK for h, _ in events), "no long wait traced"
    assert "error" not in console.split("spinlab-agent: region:")[-1], console


def test_stream_off_without_the_region_says_why_on_the_console(guest_image, tmp_path):
    cfg = guest_cfg(cpus=1, accel="tcg", mode="tas", workload="idle",
                    append=["spinlab.stream=0", "spinlab.seconds=0"])
    argv = stream_off_argv(tmp_path, cfg, None)
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    console = (tmp_path / "console.log").read_text(errors="replace")
    assert "spinlab-agent: error: spinlab.stream=0 (no waits port: the region and the control " \
           "channel only) needs spinlab.region=1" in console, console
    assert r.returncode is not None
