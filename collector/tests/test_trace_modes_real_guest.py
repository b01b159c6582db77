"""Logger modes through `spinlab-collect trace` against the real kernel (spinlab/trace.h).

One guest under TCG with lockbench on 2 vCPUs (its ring-3 locks report spinlock events): a
circular session of 4 KiB buffers, MinimumBuffers 2, MaximumBuffers 6. `trace status` says how
many buffers each CPU has (NumberOfBuffers, per CPU): 2 at the start, grown to 6 on demand once
the flight recorder is full. `trace flush --output` writes the recorder's contents while the
session keeps running, twice: each snapshot holds events of both CPUs, the second newer ones
than the first, and the session is still running after each; a real-time session's snapshot is
refused. The in-guest suite trace_modes checks the same kernel paths event by event; this is
the collector's side of them. Needs `make build` and root for /dev/shm; TCG.
"""
import re
import subprocess
import time

from real_guest import COLLECT, lockbench_guest


def collect(g, *args, check=True):
    r = subprocess.run([COLLECT, *args, "--vm", g["name"], "--run-dir", g["run_dir"], "--timeout", "20000"],
                       env=g["env"], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"spinlab-collect {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


def buffers(g):
    """(state, NumberOfBuffers, [per CPU]) from `trace status`."""
    text = collect(g, "trace", "status").stdout
    state = re.search(r"^state\s+(\S+)$", text, re.M)[1]
    m = re.search(r"^NumberOfBuffers\s+(\d+) \(per CPU: ([\d ]+)\)$", text, re.M)
    assert m, text
    return state, int(m[1]), [int(x) for x in m[2].split()]


def snapshot_events(path):
    """{cpu: [tsc, ...]} of the spinlock events in a trace file, from `trace dump`."""
    out = subprocess.run([COLLECT, "trace", "dump", path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    per_cpu = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^(\d+) cpu=(\d+) .*\bspinlock\b", line)
        if m:
            per_cpu.setdefault(int(m[2]), []).append(int(m[1]))
    assert re.search(r"^# cpu 1 ", out.stdout, re.M), "no counters frame:\n" + out.stdout[-2000:]
    return per_cpu


def test_circular_snapshots_buffer_growth_and_no_snapshot_of_real_time(tmp_path):
    with lockbench_guest("tm") as g:
        collect(g, "trace", "start", "--mode", "circular", "--enable", "spinlock",
                "--buffer-size", "4096", "--min-buffers", "2", "--max-buffers", "6", "--flush-timer", "0")
        state, total, per_cpu = buffers(g)
        assert state == "running"
        # The total is the guest's answer, the per-CPU counts are read from the region just after:
        # counts only grow, so the total is at most their sum.
        assert len(per_cpu) == 2 and all(2 <= n <= 6 for n in per_cpu) and total <= sum(per_cpu), (total, per_cpu)
        first = collect(g, "trace", "flush", "-o", str(tmp_path / "one.trace"))
        assert "still running" in first.stdout, first.stdout
        # lockbench's locks keep reporting: each CPU grows, one buffer at a time, to its maximum
        # (and no further), and never gives one back.
        seen = [per_cpu]
        deadline = time.time() + 120  # 2.5 s on a quiet host; 45 s at nice 19 beside a busy loop
        while per_cpu != [6, 6] and time.time() < deadline:
            time.sleep(0.5)
            state, total, per_cpu = buffers(g)
            assert state == "running"
            seen.append(per_cpu)
        assert per_cpu == [6, 6], seen
        assert all(a <= b for x, y in zip(seen, seen[1:]) for a, b in zip(x, y)), seen
        one = snapshot_events(str(tmp_path / "one.trace"))
        collect(g, "trace", "flush", "-o", str(tmp_path / "two.trace"))
        two = snapshot_events(str(tmp_path / "two.trace"))
        assert buffers(g)[0] == "running"
        collect(g, "trace", "stop")
        # A real-time session is drained by trace record: no snapshot of it, but a flush is fine.
        collect(g, "trace", "start", "--enable", "spinlock")
        r = collect(g, "trace", "flush", "-o", str(tmp_path / "x.trace"), check=False)
        assert r.returncode == 2 and "circular" in r.stderr, (r.returncode, r.stderr)
        assert "published" in collect(g, "trace", "flush").stdout
        collect(g, "trace", "stop")
    assert set(one) == {0, 1} and set(two) == {0, 1}, (one.keys(), two.keys())
    for cpu in (0, 1):
        assert max(two[cpu]) > max(one[cpu]), f"cpu {cpu}: the second snapshot is not newer"
