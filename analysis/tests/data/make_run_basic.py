#!/usr/bin/python3
"""Writes run-basic/, the hand-made results directory the tests read (see README.md here).

Every number is chosen by hand below: wait lists per CPU and lock class (bucketed here with
int.bit_length, independently of spinlab_report), long waits and the host timeline. Rerun it
only when the contract changes, then re-derive the expected values in README.md by hand.
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run-basic")
GHZ = 1_000_000_000  # guest TSC at 1 GHz: one repetition of 1 s is 1e9 cycles


def hist(values):
    """Sparse, as the collector writes it: {"k": count} for the non-empty buckets only."""
    h = {}
    for v in values:
        k = str(max(v.bit_length() - 1, 0))
        h[k] = h.get(k, 0) + 1
    return dict(sorted(h.items(), key=lambda kv: int(kv[0])))


def cls(waits, uncontended, holds, overflow=0, lhp=None):
    """One lock class on one CPU; lhp defaults to every contended wait 'unknown' (TCG)."""
    lhp = lhp or {"unknown": {"count": len(waits) + overflow, "cycles": sum(waits)}}
    return {"acquisitions": uncontended + len(waits) + overflow, "uncontended": uncontended,
            "wait_overflow": overflow, "wait_cycles_sum": sum(waits), "wait_cycles_max": max(waits, default=0),
            "holds_timed": len(holds), "hold_overflow": 0, "hold_cycles_sum": sum(holds),
            "hold_cycles_max": max(holds, default=0), "long_holds": 0,
            "wait_hist": hist(waits), "hold_hist": hist(holds), "lhp": lhp}


def lw(cpu, start, wait, holder, lhp="unknown", klass="lockbench.0"):
    # the lock class under its name before issue 53 (today's runner writes lock_class), as
    # run-basic was recorded: run-basic is also the test of the reader's old name (contract.OLD_KEYS)
    return {"cpu": cpu, "class": klass, "start_tsc": start, "wait_cycles": wait,
            "holder_cpu": holder, "lhp_class": lhp}


# phase, rep, guest start TSC, ops/s, {cpu: {class: stats}}, long waits
SNAPS = [
    ("idle-host", 1, 1 * GHZ, 1000.0, {
        0: {"lockbench.0": cls([600] * 5 + [1500], 44, [200] * 50),
            "sched": cls([1_100_000], 0, [5000])},
        1: {"lockbench.0": cls([700] * 3, 46, [200] * 49)}},
     [lw(0, 1_400_000_000, 1_100_000, 1, klass="sched")]),
    ("host-load", 1, 3 * GHZ, 500.0, {
        0: {"lockbench.0": cls([600] * 4 + [1500] * 2 + [5_000_000, 4_500_000] + [20_000_000], 20, [200] * 30,
                               overflow=1, lhp={"holder-preempted": {"count": 1, "cycles": 5_000_000},
                                                "unknown": {"count": 9, "cycles": 24_508_800}})},
        1: {"lockbench.0": cls([600] * 2 + [6_000_000], 20, [200] * 23,
                               lhp={"neither": {"count": 1, "cycles": 6_000_000},
                                    "unknown": {"count": 2, "cycles": 1200}}),
            "sched": cls([], 1, [4000])}},
     [lw(0, 3_100_000_000, 5_000_000, 1, "holder-preempted"), lw(1, 3_200_000_000, 6_000_000, 0, "neither"),
      lw(0, 3_300_000_000, 4_500_000, 1), lw(0, 3_500_000_000, 20_000_000, 1)]),
    ("idle-host", 2, 5 * GHZ, 1100.0, {
        0: {"lockbench.0": cls([600] * 4 + [1500], 45, [200] * 50)},
        1: {"lockbench.0": cls([600] * 4 + [1500], 45, [200] * 49 + [300])}},
     []),
    ("host-load", 2, 7 * GHZ, 600.0, {
        0: {"lockbench.0": cls([600, 1500, 30_000_000], 20, [200] * 23)},
        1: {"lockbench.0": cls([600, 1500, 7_000_000, 17_000_000], 19, [200] * 23)}},
     [lw(1, 7_100_000_000, 7_000_000, 0), lw(0, 7_990_000_000, 30_000_000, 1),
      lw(0, 7_500_000_000, 17_000_000, 1)]),
]

# host TSC = guest TSC + 1000. vcpu, state, start, end (host TSC); "on" fills the rest.
OFF = {("host-load", 1): [(1, "off", 3_100_001_000, 3_105_001_000), (1, "off", 3_302_000_000, 3_310_000_000),
                          (1, "off", 3_495_000_000, 3_500_001_000),
                          (0, "off", 3_505_000_000, 3_515_000_000)],
       ("host-load", 2): [(0, "frozen", 7_101_000_000, 7_106_000_000), (1, "off", 7_100_000_000, 7_100_500_000)]}


def timeline_rows(phase, rep, start):
    lo, hi = start + 1000, start + GHZ + 1000
    for vcpu in (0, 1):
        t = lo
        for v, state, a, b in sorted(x for x in OFF.get((phase, rep), []) if x[0] == vcpu):
            yield (vcpu, 1001 + vcpu, "on", t, a, phase, rep)
            yield (vcpu, 1001 + vcpu, state, a, b, phase, rep)
            t = b
        yield (vcpu, 1001 + vcpu, "on", t, hi, phase, rep)


def main():
    os.makedirs(os.path.join(OUT, "snapshots"), exist_ok=True)
    meta = {"format": 1, "run_id": "run-basic", "date": "2025-01-01T12:00:00Z", "git_rev": "0123abc",
            "host": {"cpu_model": "Hand-made CPU @ 2.60GHz", "kernel": "6.1.0-test", "cpus": 2, "tsc_hz": GHZ},
            "qemu_version": "7.2.0", "libvirt_version": None, "accelerator": "tcg", "backend": "qemu",
            "vcpus": 2, "memory_mb": 256, "lock": "tas", "pause": True, "clock": "lfence",
            "pinning": "none", "guest_tsc_hz": GHZ, "workload": "lockbench",
            "phases": ["idle-host", "host-load"], "repetitions": 2}
    dump = lambda name, obj: open(os.path.join(OUT, name), "w").write(json.dumps(obj, indent=1) + "\n")
    dump("meta.json", meta)
    dump("status.json", {"format": 1, "state": "complete", "reason": "",
                         "done": [[p, r] for p, r, *_ in SNAPS]})
    # Two kept samples 9 s apart, each bracketed to +-20 cycles: every mapping is good to 20.
    dump("clock.json", {"format": 1, "method": "bracket-envelope", "offset_cycles": 1000, "drift_ppm": 0.0,
                        "ref_guest_tsc": 0, "bound_max_cycles": 20.0, "bound_median_cycles": 20.0,
                        "samples": 2, "samples_taken": 3, "rejected": {"unordered": 0, "wide": 1, "late": 0},
                        "residual_cycles": 0.0, "max_bracket_cycles": 40.0,
                        "points": [[0, 1000, 20.0], [9 * GHZ, 1000, 20.0]]})
    open(os.path.join(OUT, "spec.ini"), "w").write(
        "[vm]\nvcpus = 2\naccel = tcg\nlock = tas\n\n[run]\nphases = idle-host,host-load\nrepetitions = 2\n")
    rows = ["vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep"]
    for phase, rep, start, ops, cpus, waits in SNAPS:
        snap = {"format": 1, "phase": phase, "rep": rep,
                "start": {"guest_tsc": start, "wall": f"2025-01-01T12:00:0{rep}Z"},
                "end": {"guest_tsc": start + GHZ, "wall": f"2025-01-01T12:00:0{rep + 1}Z"},
                "duration_s": 1.0, "workload": {"lockbench": {"ops": int(ops), "ops_per_s": ops}},
                "cpus": [{"cpu": c, "classes": classes} for c, classes in cpus.items()],
                # the long-wait threshold under its name before 2026-12, as run-basic was recorded:
                # run-basic is also the test of the reader's old name (contract.OLD_KEYS)
                "long_waits": waits, "long_waits_min_cycles": 1 << 20, "long_waits_dropped": 0}
        dump(f"snapshots/{phase}-r{rep}.json", snap)
        rows += [",".join(map(str, r)) for r in timeline_rows(phase, rep, start)]
    open(os.path.join(OUT, "timeline.csv"), "w").write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
