"""The host tools against a real guest whose shared region is scribbled on: none may crash.

Boots the kernel under TCG with lockbench on 2 vCPUs, starts a trace session with every group,
and runs `trace record`, `watch -i 1`, `record -i 0.5` and `query` on it, each again and again
(a run that ends is started anew; each trace record attaches to the one session), while for
12 s this process writes (300 a second) random bytes into the region file (/dev/shm/spinlab-NAME), as a
hostile guest would. Every run must end with exit status 0 or 6
(the corrupt-region status, docs/architecture.md "What the host trusts"), never a signal; a 6
must name what was wrong; and each output must keep what was taken before the end: a trace file
holds exactly the events its `trace record` said it wrote (trace dump reads them), a record file
is whole JSON lines with its end line and every snapshot it counted, a query's JSON is whole.

The writes: half are 64 random bytes at a random offset anywhere in the region (the writes that
first crashed the host tools), half are one word on a field a host tool reads (each CPU's trace
counters and perf data, the clock publication's cpu/period/count, the trace session's geometry:
buffers_offset, BufferSize, buffers_per_cpu: a rewritten geometry once crashed trace record with
SIGSEGV), and once, late in the 12 s, the region header's geometry (which stays broken: every later
attach stops at it). Left alone, because they are not about the host: the words a fresh attach uses
to tell "not a spinlab region / another ABI / still booting" (magic, abi_version, generation: exits
3 and 4 by design, and a broken generation after attach is covered by hostile_region_test), the
clock's seq and guest_tsc (the guest's own heartbeat: a guest that stops publishing is a guest gone,
exit 5), and the rest of the trace area's header (the guest's kernel re-reads its offsets, CPU count
and seq for every trace query: it would crash itself; the host's copy of them is tested by
hostile_region_test and hostile_region_fuzzer). The seed is printed for a rerun
(SPINLAB_HOSTILE_SEED). Needs `make build` and /dev/shm; TCG.
"""
import json
import mmap
import os
import random
import re
import signal
import struct
import subprocess
import threading
import time

import pytest

from real_guest import COLLECT, lockbench_guest

CORRUPT = 6  # hostlib/error.h kExitCorrupt
WRITE_SECONDS = 12
WRITES_PER_SECOND = 300


@pytest.fixture(scope="module")
def guest():
    with lockbench_guest("hr") as g:
        yield g


def base_args(g, timeout_ms=20000):
    return ["--vm", g["name"], "--run-dir", g["run_dir"], "--timeout", str(timeout_ms)]


def collect_args(g, *args):
    return subprocess.run([COLLECT, *args, *base_args(g)], env=g["env"], capture_output=True,
                          text=True, timeout=120)


def spawn(g, *args, timeout_ms=2000):
    return subprocess.Popen([COLLECT, *args, *base_args(g, timeout_ms)], env=g["env"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Layout:
    """The region's sections and the trace area's controls, read once before any write."""

    def __init__(self, m):
        cpus = struct.unpack_from("<I", m, 32)[0]
        sec = [struct.unpack_from("<QQII", m, 96 + 24 * i) for i in range(4)]
        self.size = len(m)
        self.cpus = cpus
        self.perf = [sec[0][0] + sec[0][2] * k for k in range(cpus)]
        self.clock = sec[1][0]
        trace = sec[3][0]
        control_offset, stride = struct.unpack_from("<II", m, trace + 24)
        self.trace = trace
        # The trace area's header, but for the geometry words the guest reads only when a
        # session starts (and rewrites then): the ones the host's drain once re-read, and crashed
        # on when they changed.
        self.trace_geometry = [(trace + 32, 8), (trace + 56, 4), (trace + 60, 4), (trace + 64, 4),
                               (trace + 92, 4)]  # buffers_offset, BufferSize, Min/MaxBuffers,
        #                                           buffers_per_cpu
        header = [(trace, trace + 32), (trace + 40, trace + 56), (trace + 68, trace + 92),
                  (trace + 96, trace + 240)]
        self.controls = [trace + control_offset + stride * k for k in range(cpus)]
        # Never written (see the module's docstring): magic, abi_version, generation,
        # perfdata_version and perfdata_size; the clock's seq and guest_tsc; the trace header.
        self.protected = [(0, 16), (24, 32), (36, 44), (self.clock, self.clock + 16)] + header

    def fields(self):
        """(offset, width) of the fields a host tool reads: the region header's 15 first."""
        out = [(16, 8), (32, 4), (44, 4)]                                # size, cpus, sections
        out += [(96 + 8 * i, 8) for i in range(12)]                       # the section table
        out += [(self.clock + 16, 8), (self.clock + 24, 4), (self.clock + 28, 4)]  # count ..
        out += self.trace_geometry
        for c in self.controls:                                           # produced, overwritten,
            out += [(c + o, 8) for o in (0, 8, 16, 32, 192, 200)]         # .. consumed
        for p in self.perf:                                               # magic .. counts
            out += [(p, 4), (p + 8, 4), (p + 24, 8), (p + 64, 8), (p + 72, 8), (p + 64 + 0xC0, 8)]
        return out

    def allowed(self, off, n):
        return all(off + n <= a or off >= b for a, b in self.protected)


def scribble(path, seconds, rng):
    """Writes into the region for `seconds`; returns how many writes were made."""
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, 0)
        lay = Layout(m)
        fields = lay.fields()
        writes = 0
        end = time.time() + seconds
        header_at = end - seconds * rng.uniform(0.1, 0.4)  # the geometry breaks once, late
        while time.time() < end:
            if header_at and time.time() >= header_at:
                header_at = None
                off, width = rng.choice(fields[:15])
                data = rng.getrandbits(8 * width).to_bytes(width, "little")
            elif rng.random() < 0.5:
                off, data = rng.randrange(0, lay.size - 64), rng.randbytes(64)
            else:
                off, width = rng.choice(fields[15:])
                value = rng.choice([0, 1, 2**63, 2**64 - 1, rng.randrange(0, 1 << 20),
                                    rng.getrandbits(64)])
                data = (value % 2 ** (8 * width)).to_bytes(width, "little")
            if lay.allowed(off, len(data)):
                m[off:off + len(data)] = data
                writes += 1
            time.sleep(1 / WRITES_PER_SECOND)
        m.close()
        return writes
    finally:
        os.close(fd)


NAMED = re.compile(r"corrupt shared region \S+: (cpu \d+: |region header|trace area|clock publication)")


def check_exit(what, rc, stderr):
    assert rc >= 0, f"{what} died of signal {signal.Signals(-rc).name}: {stderr[-2000:]}"
    assert rc in (0, CORRUPT), f"{what} exit {rc}: {stderr[-2000:]}"
    if rc == CORRUPT:
        assert NAMED.search(stderr), f"{what}: exit 6 without a named field: {stderr[-2000:]}"


def run_repeatedly(g, name, args_for, until, results):
    """Runs one tool again and again until `until` (each run ends about 2 s after it), keeping
    (name, exit status, stdout, stderr, output file) of every run in `results`."""
    i = 0
    while time.time() < until:
        path = os.path.join(g["tmp"], f"{name.replace(' ', '-')}-{i}")
        args, timeout_ms = args_for(path, f"{until - time.time() + 2:.1f}")
        p = spawn(g, *args, timeout_ms=timeout_ms)
        out, err = p.communicate(timeout=WRITE_SECONDS + 120)
        results.append((f"{name} #{i}", p.returncode, out, err, path))
        i += 1
        time.sleep(0.5)


def check_trace_file(what, rc, out, err, path):
    """The file holds exactly the events `trace record` said it wrote; trace dump reads them."""
    said = re.search(r"trace: .*?; (\d+) buffers, (\d+) events to ", out + err)
    if not said:  # it stopped before its first buffer (the region was already corrupt)
        assert rc == CORRUPT, f"{what}: no summary line: {err[-2000:]}"
        return 0
    d = subprocess.run([COLLECT, "trace", "dump", path], capture_output=True, text=True,
                       timeout=120)
    assert d.returncode == 0, f"{what}: trace dump: {d.stderr[-2000:]}"
    dumped = re.search(r"^# (\d+) events$", d.stdout, re.M)
    assert dumped and int(dumped.group(1)) == int(said.group(2)), (what, said.group(0))
    return int(said.group(2))


def check_record_file(what, rc, path):
    """Whole JSON lines: the header, every snapshot the end line counts, the end line."""
    lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
    if not lines:  # it stopped at attach, before the header
        assert rc == CORRUPT, what
        return
    assert [l["type"] for l in lines[:1] + lines[-1:]] == ["header", "end"], (what, lines[-1:])
    snapshots = [l for l in lines if l["type"] == "snapshot"]
    assert len(snapshots) == lines[-1]["snapshots"] == len(lines) - 2, what
    assert [l["seq"] for l in snapshots] == list(range(len(snapshots))), what
    if rc == CORRUPT:  # the end line says why
        assert NAMED.search(lines[-1]["reason"]), (what, lines[-1])


def test_tools_survive_random_writes(guest, tmp_path):
    seed = int(os.environ.get("SPINLAB_HOSTILE_SEED", time.time_ns() % 2**32))
    print(f"SPINLAB_HOSTILE_SEED={seed}")
    rng = random.Random(seed)
    g = dict(guest, tmp=str(tmp_path))
    shm = os.path.join(g["run_dir"], "vm", g["name"], "shm")
    # One session, started before the first write and stopped after the last: each trace record
    # run attaches to it. A start lays out the trace area and every guest CPU then arms its
    # writer from the area's header (the guest trusts its own region), so none may happen while
    # this test writes into that header.
    r = collect_args(g, "trace", "start", "--enable", "all", "--flush-timer", "50")
    assert r.returncode == 0, r.stderr
    start = time.time()
    writes_from = start + 5  # the session drained for 5 s first
    until = writes_from + WRITE_SECONDS
    tools = {
        "trace record": lambda path, d: (["trace", "record", "--duration", d, "-o", path], 20000),
        "watch": lambda path, d: (["watch", "-i", "1", "--duration", d], 2000),
        "record": lambda path, d: (["record", "-i", "0.5", "--duration", d, "-o", path], 2000),
        "query": lambda path, d: (["query", "--format", "json"], 2000),
    }
    results = []
    threads = []
    for name, args_for in tools.items():  # each tool again and again until the writes end
        threads.append(threading.Thread(target=run_repeatedly,
                                        args=(g, name, args_for, until, results)))
        threads[-1].start()
        time.sleep(1.5)
    time.sleep(max(0.0, writes_from - time.time()))
    writes = scribble(shm, WRITE_SECONDS, rng)
    for t in threads:
        t.join()
    collect_args(g, "trace", "stop")  # best effort: the guest may refuse a scribbled-on session

    exits = {}
    for what, rc, out, err, path in results:
        exits.setdefault(what.split(" #")[0], []).append(rc)
    print(f"{writes} writes; exit statuses of each tool's runs: {exits}")
    seen = set()
    for what, rc, out, err, path in results:
        why = re.sub(r"\S+/shm", "SHM", (err.strip().splitlines() or [""])[-1])[:150]
        if rc != 0 and why not in seen:
            seen.add(why)
            print(f"  {what}: {why}")

    assert writes > WRITE_SECONDS * WRITES_PER_SECOND // 4
    # The guest must outlive the writes: its kernel writes its events into the region, and a
    # control word or slot table entry written here must not send it outside (a page fault there
    # once ended the guest, and every later tool exited 3, "no VM").
    if any(rc == 3 for _, rc, _, _, _ in results):
        console = os.path.join(g["run_dir"], "vm", g["name"], "console.log")
        try:
            tail = open(console, errors="replace").read()[-3000:]
        except OSError as e:
            tail = f"(no console: {e})"
        pytest.fail(f"a tool found no VM: did the guest die? Its console's end:\n{tail}")
    events = []
    for what, rc, out, err, path in results:
        check_exit(what, rc, err)
        if what.startswith("trace record"):
            events.append(check_trace_file(what, rc, out, err, path))
        elif what.startswith("record"):
            check_record_file(what, rc, path)
        elif what.startswith("query") and rc == 0:
            json.loads(out)  # a whole answer, never a half-printed one
        elif what.startswith("watch") and rc == 0:
            assert out.count("interval") >= 1, (what, out[-500:])
    assert events and events[0] > 0, events  # the first recording ran 5 s before any write
