#!/usr/bin/env bash
# scripts/bench-trace-guest.sh: what a trace session costs the guest. One boot of a 2-vCPU guest
# running WORKLOAD for the whole benchmark; the host alternates windows of WINDOW_S seconds with
# no session and with a session of each mode in real-time mode: `spinlab-collect trace start`,
# then `trace record` drains it into a trace file for the window, then `trace stop`. The window
# is the running session only: a start (laying out the trace area) and a stop (flushing every
# CPU) are one-off costs, timed apart (start_s, stop_s). The session parameters are the
# defaults (the spinlock sampling parameters too), so the events/s of each mode is reported
# beside its cost.
#
#   WORKLOAD=lockbench (default): lockbench with the default experiment's arguments (one
#     test-and-set lock, 200-cycle critical sections, one thread per vCPU): ring-3 locks, whose
#     events go through each thread's ring (the user-mode logger, TRACE_VIA=ring, the default)
#     or a system call each (TRACE_VIA=syscall, as before the ring existed), or nowhere
#     (TRACE_VIA=drop: the session's hold timing and sampling alone, no event written): lockbench
#     --trace-via. Modes: none, spinlock, all. Throughput: lockbench's acquisitions per second
#     (its user* classes).
#   WORKLOAD=kmix: kmix, the experiment's kernel workload, as `make run` runs it (spawn, yield,
#     sleep, map on every vCPU): kernel locks, whose events are written in place. Modes: none,
#     spinlock. Throughput: acquisitions per second of the kernel classes kmix's operations take
#     (proc_table, address_space, pmm, heap; not sched, which the timer and idle loop take too,
#     nor channel and sysinfo, which the trace commands take).
#   ACCEL=tcg (default) or kvm (nested KVM on the build machines: ring 0 is slow there).
#
# The throughput comes from the counters in the shared region (`spinlab-collect record` every
# 0.25 s, no channel traffic), over the inside of each window (the first MARGIN_S and last 0.5 s
# are left out). Each round runs every mode back to back, in an order
# rotated every round, and its ratios are taken within the round; the JSON gives every window,
# the per-round ratios and their medians, the host CPU, its CPU count, the kernel and the
# accelerator QEMU ran with.
#
#   scripts/bench-trace-guest.sh                      lockbench, TCG, ROUNDS=5 WINDOW_S=8
#   TRACE_VIA=syscall OUT=build/bench/trace-guest-syscall.json scripts/bench-trace-guest.sh
#   WORKLOAD=kmix ACCEL=kvm OUT=build/bench/trace-guest-kmix-kvm.json scripts/bench-trace-guest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench/trace-guest.json}
mkdir -p "$(dirname "$OUT")"
exec env PYTHONPATH=vm-images /usr/bin/python3 - "$OUT" "${ROUNDS:-5}" "${WINDOW_S:-8}" "${MARGIN_S:-1.5}" \
    "${WORKLOAD:-lockbench}" "${ACCEL:-tcg}" "${TRACE_VIA:-ring}" <<'PY'
import json, os, platform, re, shutil, signal, statistics, subprocess, sys, tempfile, time

import qemu_launch

out, rounds, window_s, margin_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
workload, accel, trace_via = sys.argv[5], qemu_launch.choose_accel(sys.argv[6]), sys.argv[7]
if trace_via not in ("ring", "syscall", "drop"):
    raise SystemExit(f"bench-trace-guest: TRACE_VIA={trace_via}: ring, syscall or drop")
collect = "build/host/bin/spinlab-collect"
vm = "vm-images/spinlab-vm"
LOCKBENCH = ("--threads-per-cpu 1 --locks 1 --pattern same --cs-cycles 200 --think-cycles 200 --duration-ms 0 "
             f"--trace-via {trace_via}")
KMIX = "--duration-ms 0"
WORKLOADS = {
    # program and arguments, modes, the classes whose acquisitions measure its throughput
    "lockbench": (f"/bin/lockbench {LOCKBENCH}", {"none": None, "spinlock": "spinlock", "all": "all"},
                  lambda name: name.startswith("user")),
    "kmix": (f"/bin/kmix {KMIX}", {"none": None, "spinlock": "spinlock"},
             lambda name: name in ("proc_table", "address_space", "pmm", "heap")),
}
if workload not in WORKLOADS:
    raise SystemExit(f"bench-trace-guest: WORKLOAD={workload}: lockbench or kmix")
PROGRAM, MODES, COUNTED = WORKLOADS[workload]
APPEND = f"long-wait=1048576 init={PROGRAM}"
END_MARGIN_S = 0.5
if window_s - margin_s - END_MARGIN_S < 2:
    raise SystemExit("bench-trace-guest: WINDOW_S must leave at least 2 s inside the margins")


def ops(snapshot, ids):
    return sum(c["perf"]["acquisitions"] for cpu in snapshot["cpus"] for c in cpu["classes"]
               if c["id"] in ids)


def window_rate(snapshots, ids, t0_ns, t1_ns):
    """Acquisitions/s of the classes `ids` between the first snapshot after t0 + margin and the
    last before t1 - end margin (host realtime ns), or None if fewer than two fall inside."""
    inside = [s for s in snapshots
              if t0_ns + margin_s * 1e9 <= s["host_ns"] <= t1_ns - END_MARGIN_S * 1e9]
    if len(inside) < 2:
        return None, 0.0
    a, b = inside[0], inside[-1]
    secs = (b["host_ns"] - a["host_ns"]) / 1e9
    return (ops(b, ids) - ops(a, ids)) / secs, secs


def collect_run(what, *argv):
    p = subprocess.run([collect, *argv, *args], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"bench-trace-guest: {what} failed: {p.stderr.strip()}")
    return p.stdout + p.stderr


def traced_window(w, path, groups):
    """One window with a session of `groups`: started (and later stopped) on its own, so that
    the window covers only the running session: a start lays out the trace area and a stop
    flushes every CPU, which are one-off costs (their seconds are kept in w). In between,
    `trace record` drains the running session into `path` for WINDOW_S seconds."""
    t_req = time.time_ns()
    collect_run(f"trace start ({groups})", "trace", "start", "--enable", groups)
    t0 = time.time_ns()
    out = collect_run(f"trace record ({groups})", "trace", "record", "--duration", str(window_s), "-o", path)
    t1 = time.time_ns()
    collect_run("trace stop", "trace", "stop")
    w["start_s"], w["stop_s"] = round((t0 - t_req) / 1e9, 3), round((time.time_ns() - t1) / 1e9, 3)
    m = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", out))
    w["events_written"] = m.get("events_written", 0)  # since the start, when the recording ended
    w["events_lost"] = m.get("events_lost", 0)
    w["events_per_s"] = round(w["events_written"] / ((t1 - t0) / 1e9), 1)
    w["trace_bytes"] = os.path.getsize(path)
    os.remove(path)
    return t0, t1


load_start = round(os.getloadavg()[0], 2)
run_dir = tempfile.mkdtemp(prefix="spinlab-tracebench-")
env = dict(os.environ, SPINLAB_RUN_DIR=run_dir)
vmname = f"tb{os.getpid()}{workload[:1]}"
args = ["--vm", vmname, "--run-dir", run_dir, "--timeout", "20000"]
counters = None
try:
    subprocess.run([vm, "start", vmname, "--cpus", "2", "--accel", accel, "--append", APPEND],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while subprocess.run([collect, "trace", "status", *args], env=env, capture_output=True).returncode:
        if time.time() > deadline:
            raise SystemExit("bench-trace-guest: the guest never answered on its channel")
        time.sleep(0.5)
    # The counters for the whole benchmark, from the region every 0.25 s; the channel is used
    # only to fetch the class names, so wait for the first snapshot before any trace command.
    record_path = os.path.join(run_dir, "counters.jsonl")
    counters = subprocess.Popen([collect, "record", *args, "-i", "0.25", "-o", record_path],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not (os.path.exists(record_path) and '"snapshot"' in open(record_path).read()):
        if time.time() > deadline or counters.poll() is not None:
            raise SystemExit("bench-trace-guest: spinlab-collect record took no snapshot")
        time.sleep(0.2)
    time.sleep(2)  # the workload past its start

    windows = []
    order = list(MODES)
    for r in range(rounds):
        for mode in order[r % len(order):] + order[:r % len(order)]:
            w = {"round": r, "mode": mode}
            if MODES[mode] is None:
                t0 = time.time_ns()
                time.sleep(window_s)
                t1 = time.time_ns()
            else:
                t0, t1 = traced_window(w, os.path.join(run_dir, f"r{r}-{mode}.trace"), MODES[mode])
            w["t0_ns"], w["t1_ns"] = t0, t1
            windows.append(w)
            print(f"bench-trace-guest: round {r + 1}/{rounds} {mode:8} done", flush=True)
            time.sleep(0.5)
    counters.send_signal(signal.SIGINT)
    counters.wait(timeout=30)

    lines = [json.loads(l) for l in open(record_path) if l.strip()]
    header = next(l for l in lines if l["type"] == "header")
    counted = {c["id"]: c["name"] for c in header["classes"] if COUNTED(c["name"])}
    snapshots = [l for l in lines if l["type"] == "snapshot"]
    if not counted:
        raise SystemExit(f"bench-trace-guest: {workload}'s lock classes are not in the record")
    for w in windows:
        w["ops_per_s"], w["measured_s"] = window_rate(snapshots, counted, w["t0_ns"], w["t1_ns"])
        if w["ops_per_s"] is None:
            raise SystemExit(f"bench-trace-guest: no two snapshots inside window {w}")
        w["ops_per_s"] = round(w["ops_per_s"], 1)
        w["measured_s"] = round(w["measured_s"], 3)
    # Ratios within each round (its windows are adjacent in time).
    traced = [m for m in MODES if MODES[m]]
    per_round = []
    for r in range(rounds):
        rate = {w["mode"]: w["ops_per_s"] for w in windows if w["round"] == r}
        per_round.append({"round": r, **{f"{m}_vs_none": round(rate[m] / rate["none"], 4) for m in traced}})
    med = lambda xs: round(statistics.median(xs), 4)
    summary = {
        "median_ops_per_s": {m: med([w["ops_per_s"] for w in windows if w["mode"] == m]) for m in MODES},
        **{f"median_ratio_{m}_vs_none": med([x[f"{m}_vs_none"] for x in per_round]) for m in traced},
        **{f"range_ratio_{m}_vs_none": [min(x[f"{m}_vs_none"] for x in per_round),
                                        max(x[f"{m}_vs_none"] for x in per_round)] for m in traced},
        "median_events_per_s": {m: med([w["events_per_s"] for w in windows if w["mode"] == m]) for m in traced},
        "events_lost": sum(w.get("events_lost", 0) for w in windows),
        "median_start_s": {m: med([w["start_s"] for w in windows if w["mode"] == m]) for m in traced},
        "median_stop_s": {m: med([w["stop_s"] for w in windows if w["mode"] == m]) for m in traced},
    }
    doc = {"benchmark": f"{workload} throughput with a trace session against none, one boot",
           "workload": f"{PROGRAM}", "unit": "acquisitions per second of the classes counted",
           "classes_counted": sorted(counted.values()), "accel": accel, "vcpus": 2,
           "trace_via": trace_via if workload == "lockbench" else None,
           "window_s": window_s, "margin_s": margin_s, "rounds": rounds,
           "host_cpu": qemu_launch.host_cpu_model(), "host_cpus": os.cpu_count(),
           "host_kernel": platform.release(), "loadavg_1min_start": load_start,
           "loadavg_1min_end": round(os.getloadavg()[0], 2),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "summary": summary,
           "per_round": per_round, "windows": windows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    s = summary
    print(f"bench-trace-guest: {workload}{' --trace-via ' + trace_via if workload == 'lockbench' else ''} ({accel}) ops/s (median) "
          + ", ".join(f"{m} {s['median_ops_per_s'][m]:.0f}" for m in MODES)
          + f"; ratio vs none (median of {rounds} rounds): "
          + ", ".join(f"{m} {s[f'median_ratio_{m}_vs_none']} {s[f'range_ratio_{m}_vs_none']}" for m in traced)
          + "; events/s " + ", ".join(f"{m} {s['median_events_per_s'][m]:.0f}" for m in traced)
          + f"; {s['events_lost']} events lost -> {out}")
finally:
    if counters and counters.poll() is None:
        counters.kill()
    subprocess.run([vm, "stop", vmname], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(run_dir, ignore_errors=True)
PY
