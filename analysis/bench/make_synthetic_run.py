#!/usr/bin/python3
"""Writes a synthetic results directory shaped like a real `spinlab-run` run (the contract:
analysis/README.md), at any size, for the report-scaling benchmark (bench_report.py).

    make_synthetic_run.py OUT --vcpus 64 --long-waits 1000000 [--reps 6 --duration 60 --seed 1]

What it writes, per phase (idle-host, host-load) and repetition:
- snapshots/<phase>-r<rep>.json: every vCPU with the lock classes a real guest has (user0 and six
  kernel classes), histograms that satisfy the contract's invariant and contain the long waits,
  the long-wait list (this repetition's share of --long-waits; host-load gets 3 in 4 of them),
  and the `trace` object with exact loss counters;
- snapshots/<phase>-r<rep>.trace: a real trace file with one `spinlock` long-wait event per listed
  wait, written through the collector's real writer and drain by build/host/bin/trace_script
  (the tool the analysis tests make their traces with), as `[trace] enable = long-wait` records;
- timeline.csv: every vCPU's on/off intervals covering each repetition (--switches-per-s host
  deschedulings per vCPU-second; host-load waits have their holder's vCPU off for part of the
  wait, as under a CPU hog), and clock.json with a drifting offset sampled every 100 ms.
Guest classes in the list are `unknown` (as under TCG) for half of the waits, the rest carry the
class the timeline gives, so the report measures and cross-checks both kinds.

What a real run has that this lacks: context switches, wakes, system calls and profile samples in
the traces (the `make run` spec traces long waits only, so real traces lack them too), call stacks,
and frozen/unknown timeline states. Deterministic for a given seed.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

try:  # analysis/, through PYTHONPATH (bench_report.py sets it)
    from spinlab_report import LHP_CLASS as L, LONG_WAIT_THRESHOLD  # the ABI's names, from the build
except ImportError:
    sys.exit("make_synthetic_run: the analysis package spinlab_report is not on the path: run it as "
             f"PYTHONPATH={os.path.dirname(os.path.dirname(os.path.abspath(__file__)))} {sys.argv[0]} ...")

HZ = 2_445_232_300  # guest TSC Hz, as on the machine the template run came from
HOST_OFFSET = 4_458_225_114_133  # host TSC = guest TSC + offset (+ drift)
DRIFT_PPM = -1.36
KERNEL_CLASSES = ["sched", "pmm", "heap", "proc_table", "address_space", "channel"]
CLASS_IDS = {"user0": 16, **{c: i + 1 for i, c in enumerate(KERNEL_CLASSES)}}
LONG_MIN = LONG_WAIT_THRESHOLD  # the long-wait threshold (the ABI's, spinlab_report.names)
TRACE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "host", "bin",
                            "trace_script")


def fail(msg: str):
    print(f"make_synthetic_run: {msg}", file=sys.stderr)
    sys.exit(2)


def host_tsc(guest):
    return guest + HOST_OFFSET + (np.asarray(guest, dtype=np.float64) * DRIFT_PPM / 1e6).astype(np.int64)


def sparse_hist(ks, counts) -> dict:
    return {str(int(k)): int(c) for k, c in zip(ks, counts) if c}


def off_intervals(rng, vcpus, g0, span, per_vcpu):
    """Per vCPU: sorted, disjoint off intervals [start, end) in guest TSC inside [g0, g0+span)."""
    out = []
    for _ in range(vcpus):
        n = max(1, per_vcpu)
        slot = span // n
        starts = g0 + np.arange(n, dtype=np.int64) * slot + rng.integers(0, slot // 2, n)
        lens = np.minimum(rng.integers(HZ // 10_000, HZ // 200, n), slot // 2 - 1)  # 0.1 .. 5 ms
        out.append((starts, starts + lens))
    return out


def long_waits(rng, n, vcpus, g0, span, offs, preempted_share):
    """n long waits: waiter, holder, start, length; a share of them while the holder's vCPU was off."""
    waiter = rng.integers(0, vcpus, n)
    holder = (waiter + rng.integers(1, max(2, vcpus), n)) % vcpus if vcpus > 1 else waiter
    wait = (2.0 ** rng.uniform(20, 26.5, n)).astype(np.int64)
    start = g0 + rng.integers(0, span - (1 << 27), n)
    pre = rng.random(n) < preempted_share
    for i in np.flatnonzero(pre):  # start just after the holder's vCPU went off
        s, e = offs[holder[i]]
        j = rng.integers(0, s.size)
        start[i] = s[j] + rng.integers(0, max(1, (e[j] - s[j]) // 4))
    order = np.argsort(start, kind="stable")
    return waiter[order], holder[order], start[order], wait[order]


def lhp_class_of(holder_off_share, waiter_off_share):
    """The guest's steal-time class (lhp_class) of each wait: any time lost by either side."""
    cls = np.full(holder_off_share.size, L.kNeither, dtype=object)
    h, w = holder_off_share > 0, waiter_off_share > 0
    cls[h & ~w], cls[~h & w], cls[h & w] = L.kHolderPreempted, L.kWaiterPreempted, L.kBoth
    return cls


def off_share(offs, cpu, start, wait):
    """Share of each wait [start, start+wait) that cpu[i] was off (numpy, per vCPU)."""
    out = np.zeros(start.size)
    for v in np.unique(cpu):
        sel = np.flatnonzero(cpu == v)
        s, e = offs[v]
        cum = np.concatenate([[0], np.cumsum(e - s)])

        def covered(t):  # off cycles in [g0, t)
            j = np.searchsorted(s, t, side="right")
            last = np.minimum(t, e[np.maximum(j - 1, 0)]) - s[np.maximum(j - 1, 0)]
            return cum[np.maximum(j - 1, 0)] + np.where(j > 0, np.maximum(last, 0), 0)
        out[sel] = (covered(start[sel] + wait[sel]) - covered(start[sel])) / wait[sel]
    return out


def class_stats(rng, cpu, lw_waits, lw_classes, hz_ops):
    """The lock classes of one vCPU; user0's histogram holds this vCPU's long waits."""
    classes = {}
    for name in ["user0"] + KERNEL_CLASSES:
        short = rng.integers(50, 400) * (20 if name == "user0" else 1)
        ks = np.arange(9, 19)
        counts = rng.multinomial(short, np.full(ks.size, 1 / ks.size))
        waits_sum = int(np.sum(counts * (2.0 ** ks * 1.44)))
        hist = dict(sparse_hist(ks, counts))
        lhp = {"unknown": {"count": int(short), "cycles": waits_sum}}
        wmax = int(2 ** 19)
        if name == "user0" and lw_waits.size:
            lk = np.floor(np.log2(lw_waits)).astype(int)
            for k, c in zip(*np.unique(lk, return_counts=True)):
                hist[str(int(k))] = hist.get(str(int(k)), 0) + int(c)
            waits_sum += int(lw_waits.sum())
            wmax = int(lw_waits.max())
            for c in np.unique(lw_classes):
                m = lw_classes == c
                e = lhp.setdefault(str(c), {"count": 0, "cycles": 0})
                e["count"] += int(m.sum())
                e["cycles"] += int(lw_waits[m].sum())
        contended = sum(hist.values())
        unc = int(hz_ops * (3 if name == "user0" else 0.05)) + 100
        holds = int(rng.integers(500, 1000))
        classes[name] = {"acquisitions": unc + contended, "uncontended": unc, "wait_overflow": 0,
                         "wait_cycles_sum": waits_sum, "wait_cycles_max": wmax, "holds_timed": holds,
                         "hold_overflow": 0, "hold_cycles_sum": holds * 2000, "hold_cycles_max": 400_000,
                         "long_holds": 0, "wait_hist": dict(sorted(hist.items(), key=lambda kv: int(kv[0]))),
                         "hold_hist": {"8": holds // 2, "10": holds - holds // 2}, "lhp": lhp}
    return classes


def write_trace(path, vcpus, waiter, holder, start, wait, lhp_codes):
    """The long waits as `spinlock` events (release = acquire + a short hold), through trace_script."""
    acquire = start + wait
    release = acquire + 9000
    hs = np.where(np.arange(start.size) % 50 == 7, 0xFFFFFFFF, holder)  # some holders seen only at the end
    order = np.argsort(release, kind="stable")
    lines = [f"config cpus={vcpus} tsc_hz={HZ} buffer_size=65536 buffers=64 session=2 start={int(start.min()) if start.size else 0}"]
    tid = 7 + waiter
    for i in order:
        lines.append(f"{release[i]} {waiter[i]} {tid[i]} 2 spinlock lock_address=0x8000029680 call_site=0 class_id=16 "
                     f"acquire_tsc={acquire[i]} release_tsc={release[i]} wait_cycles={wait[i]} spin_count=1000 "
                     f"holder_cpu_start={hs[i]} holder_cpu_end={holder[i]} lhp_class={lhp_codes[i]} flags=1 rules=8")
    script = path + ".script"
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([TRACE_SCRIPT, script, path], capture_output=True, text=True)
    os.unlink(script)
    if r.returncode != 0:
        fail(f"trace_script failed on {path}: {r.stderr.strip()}")


LHP_CODE = {name: value for value, name in enumerate(L.names)}  # LhpClass values


def snapshot(rng, out, phase, rep, vcpus, g0, span, n_waits, offs, traces):
    pre = 0.6 if phase == "host-load" else 0.05
    waiter, holder, start, wait = long_waits(rng, n_waits, vcpus, g0, span, offs, pre)
    cls = lhp_class_of(off_share(offs, holder, start, wait), off_share(offs, waiter, start, wait))
    cls[rng.random(n_waits) < 0.5] = "unknown"  # as under TCG: no steal time
    ops = 150_000.0 if phase == "idle-host" else 60_000.0
    cpus = []
    for v in range(vcpus):
        m = waiter == v
        cpus.append({"cpu": v, "classes": class_stats(rng, v, wait[m], cls[m], ops * span / HZ / vcpus)})
    lws = [{"cpu": int(a), "lock_class": "user0", "start_tsc": int(s), "wait_cycles": int(w), "holder_cpu": int(h),
            "holder_end_cpu": int(h), "lhp_class": c}
           for a, s, w, h, c in zip(waiter.tolist(), start.tolist(), wait.tolist(), holder.tolist(), cls.tolist())]
    name = f"{phase}-r{rep}"
    loss = {"events_attempted": n_waits, "events_written": n_waits, "events_lost": 0, "buffers_written": 0,
            "log_buffers_lost": 0, "realtime_buffers_lost": 0}
    snap = {"format": 1, "phase": phase, "rep": rep,
            "start": {"guest_tsc": int(g0), "wall": "2026-11-26T05:43:11Z"},
            "end": {"guest_tsc": int(g0 + span), "wall": "2026-11-26T05:44:11Z"},
            "duration_s": span / HZ, "workload": {"lockbench": {"ops": int(ops * span / HZ), "ops_per_s": ops}},
            "cpus": cpus, "long_waits": lws, "long_wait_threshold": LONG_MIN, "long_waits_dropped": 0}
    if traces:
        write_trace(os.path.join(out, "snapshots", name + ".trace"), vcpus, waiter, holder, start, wait,
                    np.array([LHP_CODE[c] for c in cls.tolist()], dtype=int))
        snap["trace"] = {"file": f"snapshots/{name}.trace", "session_id": 2, "enable_flags": "long-wait",
                         "buffer_size": 65536, "minimum_buffers": 4, "maximum_buffers": 64, "flush_timer_ms": 100,
                         "logger_mode": "real-time", "profile_interval": 1, "buffers_per_cpu": 64,
                         "events": n_waits, "buffers": 0, "damaged_frames": 0, "counters_found": True,
                         "loss": loss, "cpus": []}
    with open(os.path.join(out, "snapshots", name + ".json"), "w") as f:
        json.dump(snap, f, separators=(",", ":"))


def timeline_frame(offs, g0, span, phase, rep, vcpus):
    """Rows alternating on/off over [g0, g0+span) per vCPU, in host TSC."""
    cols = {k: [] for k in ("vcpu", "state", "start", "end")}
    for v in range(vcpus):
        s, e = offs[v]
        edges = np.concatenate([[g0], np.column_stack([s, e]).ravel(), [g0 + span]])
        states = np.tile(np.array(["on", "off"]), s.size + 1)[: edges.size - 1]
        keep = edges[1:] > edges[:-1]
        cols["vcpu"].append(np.full(keep.sum(), v))
        cols["state"].append(states[keep])
        cols["start"].append(host_tsc(edges[:-1][keep]))
        cols["end"].append(host_tsc(edges[1:][keep]))
    n = sum(a.size for a in cols["vcpu"])
    return {"vcpu": np.concatenate(cols["vcpu"]), "tid": 20000 + np.concatenate(cols["vcpu"]),
            "state": np.concatenate(cols["state"]), "start": np.concatenate(cols["start"]),
            "end": np.concatenate(cols["end"]), "phase": [phase] * n, "rep": np.full(n, rep)}


def write_timeline(path, frames):
    import pandas as pd
    df = pd.concat([pd.DataFrame(f) for f in frames], ignore_index=True)
    df = df.rename(columns={"start": "start_host_tsc", "end": "end_host_tsc"})
    df["start_ns"] = (df["start_host_tsc"] / 2.4454).astype(np.int64)
    df["end_ns"] = (df["end_host_tsc"] / 2.4454).astype(np.int64)
    df["reason"] = np.where(df["state"] == "off", "R", "")
    df["cpu"] = np.where(df["state"] == "off", -1, df["vcpu"] % 2)
    df.to_csv(path, index=False)


def clock_json(g_lo, g_hi):
    pts = np.arange(g_lo, g_hi, HZ // 10, dtype=np.int64)
    pts = np.append(pts, g_hi)
    off = host_tsc(pts) - pts
    return {"format": 1, "method": "bracket-envelope", "offset_cycles": HOST_OFFSET, "host_tsc_hz": 2445400000,
            "drift_ppm": DRIFT_PPM, "drift_measured": True, "drift_bound_ppm": 0.31, "drift_segments": int(pts.size - 1),
            "ref_guest_tsc": 0, "bound_max_cycles": 1500, "bound_median_cycles": 400, "samples": int(pts.size),
            "samples_taken": int(pts.size), "samples_missed": 0, "rejected": {"unordered": 0, "wide": 0, "late": 0},
            "residual_cycles": 500.0, "max_bracket_cycles": 1519,
            "points": [[int(g), int(o), 450.0] for g, o in zip(pts, off)]}


def make(out, vcpus, n_long_waits, reps=6, duration_s=60, switches_per_s=20.0, traces=True, seed=1):
    if vcpus < 1 or reps < 1 or duration_s < 1 or n_long_waits < 0:
        fail("--vcpus, --reps and --duration must be at least 1, --long-waits at least 0")
    if traces and not os.access(TRACE_SCRIPT, os.X_OK):
        fail(f"{TRACE_SCRIPT} not found: build it (make host) or pass --no-traces")
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(out, "snapshots"), exist_ok=True)
    phases = ["idle-host", "host-load"]
    plan = [(p, r) for r in range(1, reps + 1) for p in (phases if r % 2 else phases[::-1])]
    # host-load holds 3 in 4 of the long waits
    per = {p: n_long_waits * (0.25 if p == "idle-host" else 0.75) / reps for p in phases}
    span, g, frames = duration_s * HZ, 10 * HZ, []
    counts = {}
    for phase, rep in plan:
        g0 = g + 2 * HZ  # 2 s warm-up
        n = int(round(per[phase] * (rep))) - int(round(per[phase] * (rep - 1)))
        offs = off_intervals(rng, vcpus, g0, span, int(switches_per_s * duration_s / 2))
        snapshot(rng, out, phase, rep, vcpus, g0, span, n, offs, traces)
        frames.append(timeline_frame(offs, g0, span, phase, rep, vcpus))
        counts[(phase, rep)] = n
        g = g0 + span + HZ
    write_timeline(os.path.join(out, "timeline.csv"), frames)
    with open(os.path.join(out, "clock.json"), "w") as f:
        json.dump(clock_json(0, g + HZ), f, separators=(",", ":"))
    meta = {"format": 1, "run_id": f"synthetic-{vcpus}v-{n_long_waits}w", "date": "2026-11-26T05:42:57Z",
            "git_rev": "synthetic", "host": {"cpu_model": "AMD EPYC", "kernel": "6.1", "cpus": 2, "tsc_hz": 2445400000,
                                             "hypervisor": False},
            "qemu_version": "7.2", "libvirt_version": None, "accelerator": "kvm", "backend": "qemu", "vcpus": vcpus,
            "memory_mb": 1024, "lock": "tas", "pause": True, "clock": "lfence", "pinning": "none",
            "guest_tsc_hz": HZ, "workload": "/bin/lockbench (synthetic)", "phases": phases, "repetitions": reps,
            "order": "abba", "seed": seed, "plan": [list(x) for x in plan], "duration_s": duration_s, "warmup_s": 2,
            "trace": ({"enable_flags": "long-wait", "buffer_size": 65536, "minimum_buffers": 4, "maximum_buffers": 64,
                       "flush_timer_ms": 100, "logger_mode": "real-time", "profile_interval": 1,
                       "stacks": {"stack_flags": "none", "stack_caching": "on", "max_stack_depth": 32,
                                  "bucket_count": 256, "cache_size": 3145728}} if traces else None)}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(out, "status.json"), "w") as f:
        json.dump({"format": 1, "state": "complete", "reason": f"all {len(plan)} repetitions done",
                   "done": [list(x) for x in plan]}, f)
    with open(os.path.join(out, "spec.ini"), "w") as f:
        f.write(f"# synthetic: {vcpus} vCPUs, {n_long_waits} long waits\n[vm]\ncpus = {vcpus}\n")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--vcpus", type=int, required=True)
    ap.add_argument("--long-waits", type=int, required=True)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--duration", type=int, default=60, help="seconds per repetition")
    ap.add_argument("--switches-per-s", type=float, default=20.0, help="host deschedulings per vCPU-second")
    ap.add_argument("--no-traces", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    make(a.out, a.vcpus, a.long_waits, a.reps, a.duration, a.switches_per_s, not a.no_traces, a.seed)


if __name__ == "__main__":
    main()
