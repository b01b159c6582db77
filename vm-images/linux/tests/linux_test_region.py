"""spinlab.region=1: a Linux guest read by spinlab's own host tools (TCG boots, ~15 s).

The agent lays spinlab's shared region out in the ivshmem device, counts every slow-path wait
into its CPU's lock class 0 as the wait ends (read live from the CPU's trace_pipe) and publishes
its TSC every 10 ms; `spinlab-collect query --shm` and `info --shm` read it as they read
spinlab's kernel. Judged against the agent's own stream of the same waits, which is
independent of the region's code path (the stream carries each wait's start and end, the
region only counts):

- live: while the workload runs, a query sees some of the waits and never more than at the end;
- at the end, per CPU, exactly: acquisitions == the stream's waits on that CPU, none
  uncontended (the probe sees contended acquisitions only), wait_hist == the log2 histogram of
  the stream's wait lengths, the sum and maximum of the cycles, every wait in the LHP class
  `unknown` (no steal time in the agent);
- the region's header: the CPUs, the guest's TSC rate as its kernel calibrated it, each CPU's
  APIC id (QEMU's vCPU n has APIC id n), and the clock publications going on while the guest
  ran (`info` fits a clock while it runs).

A second boot, with the control channel (the kernel's channel server and sysinfo handler, on
the virtio-serial port org.spinlab.control): `info` over the socket answers the configuration a
Linux guest has (the lock as the ABI names it, tas here; clock lfence, counters only, no steal
time, TCG's signature, `linux <release>`), `query` names the class from the table
(spinlock_slowpath), and a `reset` mid-run zeroes every CPU's counters once (resets 1) and
counting goes on: the region ends with fewer waits than the stream, and the same invariants.

Needs build/host/bin/spinlab-collect (make) and the fetched guest image."""
import json
import os
import re
import struct
import subprocess
import threading
import time

import pytest
from linux_testlib import guest_image  # noqa: F401  (a fixture)

from spinlab_linux import boot, paths

COLLECT = paths.REPO / "build" / "host" / "bin" / "spinlab-collect"


def collect(*args):
    return subprocess.run([str(COLLECT), *args], capture_output=True, text=True, timeout=60)


def log2_hist(cycles):
    out = {}
    for c in cycles:
        k = max(c.bit_length() - 1, 0)
        out[str(k)] = out.get(str(k), 0) + 1
    return out


def make_region(path, mb=16):
    with open(path, "wb") as f:
        f.truncate(mb << 20)


def cpu_fields(region, field_offset):
    """Each CPU's uint32 at `field_offset` of its CpuPerfData (shm.h: the section table at 96)."""
    with open(region, "rb") as f:
        f.seek(96)
        offset, _size, stride, count = struct.unpack("<QQII", f.read(24))
        out = []
        for cpu in range(count):
            f.seek(offset + stride * cpu + field_offset)
            out.append(int.from_bytes(f.read(4), "little"))
        return out


def run_beside(cfg, out, poll):
    """boot.run_guest(cfg, out) while `poll(stop)` runs on a thread until the guest is done
    (stop: a threading.Event it waits on between its requests)."""
    stop = threading.Event()
    t = threading.Thread(target=poll, args=(stop,))
    t.start()
    try:
        return boot.run_guest(cfg, out)
    finally:
        stop.set()
        t.join()


def test_spinlab_collect_reads_a_linux_guest_live_and_exactly(guest_image, tmp_path):
    if not COLLECT.is_file():
        pytest.fail(f"no {COLLECT}: build the host tools (make) first")
    region = tmp_path / "region"
    make_region(region)
    cfg = boot.GuestConfig(cpus=2, accel="tcg", mode="tas", workload="hackbench", seconds=4,
                           region=str(region), region_mb=16)
    live, infos = [], []

    def poll(stop):
        while not stop.is_set():
            r = collect("query", "--shm", str(region), "--format", "json", "--per-cpu")
            if r.returncode == 0:
                live.append(json.loads(r.stdout))
            i = collect("info", "--shm", str(region))
            infos.append((i.returncode, i.stdout + i.stderr))
            stop.wait(0.3)

    res, run = run_beside(cfg, tmp_path / "out", poll)
    assert run.meta["region"] is True and run.meta["region_size"] == 16 << 20
    assert res["summary"]["lost_events"] == 0

    final = collect("query", "--shm", str(region), "--format", "json", "--per-cpu")
    assert final.returncode == 0, final.stderr
    q = json.loads(final.stdout)
    assert q["cpus"] == 2
    # The probe sees slow-path waits only, and every form of the counts says so
    # (perfdata.h AcquisitionsCounted); the table has no uncontended row.
    assert q["acquisitions_counted"] == "contended-only"
    table = collect("query", "--shm", str(region))
    assert table.returncode == 0, table.stderr
    assert "%  of contended acquisitions only\n" in table.stdout and "uncontended" not in table.stdout, table.stdout
    (cls,) = [c for c in q["classes"] if c["id"] == 0]
    per_cpu = {c["cpu"]: c["perf"] for c in cls["per_cpu"]}
    total = 0
    for cpu in (0, 1):
        waits = [w.end - w.start for w in run.waits if w.cpu == cpu]
        p = per_cpu[cpu]
        assert p["acquisitions"] == len(waits) == run.cpus[cpu]["waits"], (cpu, p["acquisitions"])
        assert p["uncontended"] == 0 and p["wait_overflow"] == 0
        assert p["wait_hist"] == log2_hist(waits), cpu
        assert p["wait_cycles_sum"] == sum(waits) and p["wait_cycles_max"] == max(waits, default=0)
        assert p["lhp"]["unknown"] == {"count": len(waits), "cycles": sum(waits)}
        assert p["holds_timed"] == 0 and p["hold_hist"] == {}
        total += len(waits)
    assert total == len(run.waits) > 0

    # live: some waits seen while the workload ran, none beyond the final count
    counts = [sum(c["merged"]["acquisitions"] for c in s["classes"] if c["id"] == 0) for s in live]
    assert counts and max(counts) <= total
    assert any(0 < n < total for n in counts), f"no query saw the waits arrive: {counts}"

    # the header: CPUs, TSC rate, APIC ids, clock publications while the guest ran
    info = collect("info", "--shm", str(region))
    assert "CPUs                   2" in info.stdout, info.stdout
    mhz = float(run.meta["tsc_mhz"])
    hz = int(next(l.split()[-1] for l in info.stdout.splitlines() if "guest TSC Hz" in l))
    assert abs(hz - mhz * 1e6) <= 1e3, (hz, mhz)
    pubs = int(next(l.split()[2] for l in info.stdout.splitlines() if "clock publications" in l))
    assert pubs >= 0.5 * cfg.seconds * 100, pubs   # every 10 ms through the workload, at least
    # A fit needs two publications bracketed within 16,384 host cycles: on a loaded host every
    # bracket may be wide, which is the host's nature (not judged, with the figures); a guest
    # that published nothing, or publications a fit refuses otherwise, fail.
    fitted = [out for rc, out in infos if rc == 0 and "no fit" not in out]
    if not fitted:
        tried = [re.search(r"have (\d+) of (\d+) \((\d+) unordered, (\d+) wide, (\d+) late\)", out)
                 for _, out in infos]
        tried = [tuple(map(int, m.groups())) for m in tried if m]   # used, of, unordered, wide, late
        too_wide = tried and all(total > 0 and total - wide < 2 for _, total, _, wide, _ in tried)
        assert too_wide, "no `info` fitted the guest's clock while it ran:\n" + (infos[-1][1] if infos else "")
        print(f"clock fit NOT JUDGED: the brackets were too wide on this host (last try: "
              f"{tried[-1][3]} of {tried[-1][1]} samples wide)")
    assert cpu_fields(region, 8) == [0, 1]     # CpuPerfData.cpu
    assert cpu_fields(region, 20) == [0, 1]    # CpuPerfData.apic_id: QEMU's vCPU n has APIC id n
    assert cpu_fields(region, 44) == [1, 1]    # CpuPerfData.acquisitions_counted: kContendedOnly


def test_the_control_channel_answers_and_resets(guest_image, tmp_path):
    if not COLLECT.is_file():
        pytest.fail(f"no {COLLECT}: build the host tools (make) first")
    region, sock = tmp_path / "region", f"/tmp/sllx-control-{os.getpid()}.sock"   # a short path
    make_region(region)
    cfg = boot.GuestConfig(cpus=2, accel="tcg", mode="tas", workload="hackbench", seconds=6,
                           region=str(region), control_socket=sock)
    at = ["--socket", sock, "--shm", str(region), "--timeout", "10000"]
    got = {}

    def mid_run(stop):   # once waits are counting: info, query by name, a reset
        while not stop.is_set() and "reset" not in got:
            r = collect("query", "--shm", str(region), "--format", "json")
            if r.returncode == 0 and any(c["merged"]["acquisitions"] for c in json.loads(r.stdout)["classes"]):
                got["info"] = collect("info", *at)
                got["query"] = collect("query", "--format", "json", *at)
                got["reset"] = collect("reset", *at)
            stop.wait(0.3)

    res, run = run_beside(cfg, tmp_path / "out", mid_run)
    assert not os.path.exists(sock), "the control socket outlived the run"
    assert "reset" in got, "the waits never started counting in the region"
    info = got["info"]
    assert info.returncode == 0, info.stderr
    for line in ("lock algorithm         tas", "clock source           lfence",
                 "instrumentation        counters", "steal time             no",
                 "hypervisor             TCGTCGTCGTCG", "lock classes           1 of 32",
                 f"build                  linux {run.meta['kernel_release']}"):
        assert line in info.stdout, (line, info.stdout)
    q = json.loads(got["query"].stdout)
    assert [c["name"] for c in q["classes"]] == ["spinlock_slowpath"], got["query"].stdout
    assert got["reset"].returncode == 0, got["reset"].stderr
    assert cpu_fields(region, 24) == [1, 1]    # CpuPerfData.resets (the low word)
    final = json.loads(collect("query", "--shm", str(region), "--format", "json", "--per-cpu").stdout)
    (cls,) = final["classes"]
    per_cpu = {c["cpu"]: c["perf"] for c in cls["per_cpu"]}
    assert 0 < sum(p["acquisitions"] for p in per_cpu.values()) < len(run.waits)
    for p in per_cpu.values():
        assert p["uncontended"] + sum(p["wait_hist"].values()) + p["wait_overflow"] == p["acquisitions"]
        assert p["lhp"]["unknown"]["count"] == p["acquisitions"]
