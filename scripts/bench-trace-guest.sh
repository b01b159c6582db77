#!/usr/bin/env bash
# scripts/bench-trace-guest.sh: what a trace session costs the guest. One boot of a 2-vCPU guest
# running lockbench with the default experiment's arguments (one test-and-set lock, 200-cycle
# critical sections, one thread per vCPU) for the whole benchmark. The host alternates windows
# of WINDOW_S seconds: no session, a session with the spinlock group only, and a session with
# every group (`--enable all`), each recorded in real-time mode by `spinlab-collect trace record`
# exactly as a user records one. The session parameters are the defaults (the spinlock sampling
# parameters too), so the events/s of each mode is reported beside its cost.
#
# lockbench's throughput is its classes' acquisitions per second, from the counters in the
# shared region (`spinlab-collect record`, no channel traffic), over the inside of each window
# (the first MARGIN_S and last 0.5 s are left out: session start and stop). Each round runs
# the three modes back to back, in an order rotated every round, and its ratios are taken
# within the round; the JSON gives every window, the per-round ratios and their medians.
#
#   scripts/bench-trace-guest.sh                      ROUNDS=5 WINDOW_S=8, TCG
#   OUT=build/bench/trace-guest.json ROUNDS=9 scripts/bench-trace-guest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench/trace-guest.json}
mkdir -p "$(dirname "$OUT")"
exec /usr/bin/python3 - "$OUT" "${ROUNDS:-5}" "${WINDOW_S:-8}" "${MARGIN_S:-1.5}" <<'PY'
import json, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, "vm-images")
import qemu_launch

out, rounds, window_s, margin_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
collect = "build/host/bin/spinlab-collect"
vm = "vm-images/spinlab-vm"
LOCKBENCH = "--threads-per-cpu 1 --locks 1 --pattern same --cs-cycles 200 --think-cycles 200 --duration-ms 0"
APPEND = f"longwait=1048576 init=/bin/lockbench {LOCKBENCH}"
MODES = {"none": None, "spinlock": "spinlock", "all": "all"}
END_MARGIN_S = 0.5
if window_s - margin_s - END_MARGIN_S < 2:
    raise SystemExit("bench-trace-guest: WINDOW_S must leave at least 2 s inside the margins")



def user_ops(snapshot, user_ids):
    return sum(c["perf"]["acquisitions"] for cpu in snapshot["cpus"] for c in cpu["classes"]
               if c["id"] in user_ids)


def window_rate(snapshots, user_ids, t0_ns, t1_ns):
    """lockbench ops/s between the first snapshot after t0 + margin and the last before
    t1 - end margin (host realtime ns), or None if fewer than two fall inside."""
    inside = [s for s in snapshots
              if t0_ns + margin_s * 1e9 <= s["host_ns"] <= t1_ns - END_MARGIN_S * 1e9]
    if len(inside) < 2:
        return None, 0.0
    a, b = inside[0], inside[-1]
    secs = (b["host_ns"] - a["host_ns"]) / 1e9
    return (user_ops(b, user_ids) - user_ops(a, user_ids)) / secs, secs


load_start = round(os.getloadavg()[0], 2)
run_dir = tempfile.mkdtemp(prefix="spinlab-tracebench-")
env = dict(os.environ, SPINLAB_RUN_DIR=run_dir)
vmname = f"tb{os.getpid()}"
args = ["--vm", vmname, "--run-dir", run_dir, "--timeout", "20000"]
counters = None
try:
    subprocess.run([vm, "start", vmname, "--cpus", "2", "--accel", "tcg", "--append", APPEND],
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
    time.sleep(2)  # lockbench past its start

    windows = []
    order = list(MODES)
    for r in range(rounds):
        for mode in order[r % 3:] + order[:r % 3]:
            t0 = time.time_ns()
            w = {"round": r, "mode": mode}
            if MODES[mode] is None:
                time.sleep(window_s)
            else:
                path = os.path.join(run_dir, f"r{r}-{mode}.trace")
                p = subprocess.run([collect, "trace", "record", *args, "--enable", MODES[mode],
                                    "--duration", str(window_s), "-o", path],
                                   env=env, capture_output=True, text=True)
                if p.returncode:
                    raise SystemExit(f"bench-trace-guest: trace record ({mode}) failed: {p.stderr.strip()}")
                m = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", p.stdout + p.stderr))
                w["events_written"] = m.get("events_written", 0)
                w["events_lost"] = m.get("events_lost", 0)
                w["trace_bytes"] = os.path.getsize(path)
                os.remove(path)
            w["t0_ns"], w["t1_ns"] = t0, time.time_ns()
            windows.append(w)
            print(f"bench-trace-guest: round {r + 1}/{rounds} {mode:8} done", flush=True)
            time.sleep(0.5)
    counters.send_signal(signal.SIGINT)
    counters.wait(timeout=30)

    lines = [json.loads(l) for l in open(record_path) if l.strip()]
    header = next(l for l in lines if l["type"] == "header")
    user_ids = {c["id"] for c in header["classes"] if c["name"].startswith("user")}
    snapshots = [l for l in lines if l["type"] == "snapshot"]
    if not user_ids:
        raise SystemExit("bench-trace-guest: lockbench's classes (user*) are not in the record")
    for w in windows:
        w["ops_per_s"], w["measured_s"] = window_rate(snapshots, user_ids, w["t0_ns"], w["t1_ns"])
        if w["ops_per_s"] is None:
            raise SystemExit(f"bench-trace-guest: no two snapshots inside window {w}")
        w["ops_per_s"] = round(w["ops_per_s"], 1)
        w["measured_s"] = round(w["measured_s"], 3)
        if "events_written" in w:
            w["events_per_s"] = round(w["events_written"] / (window_s or 1), 1)
    # Ratios within each round (the three windows are adjacent in time).
    per_round = []
    for r in range(rounds):
        rate = {w["mode"]: w["ops_per_s"] for w in windows if w["round"] == r}
        per_round.append({"round": r, "spinlock_vs_none": round(rate["spinlock"] / rate["none"], 4),
                          "all_vs_none": round(rate["all"] / rate["none"], 4)})
    med = lambda xs: round(statistics.median(xs), 4)
    summary = {
        "median_ops_per_s": {m: med([w["ops_per_s"] for w in windows if w["mode"] == m]) for m in MODES},
        "median_ratio_spinlock_vs_none": med([x["spinlock_vs_none"] for x in per_round]),
        "median_ratio_all_vs_none": med([x["all_vs_none"] for x in per_round]),
        "median_events_per_s": {m: med([w["events_per_s"] for w in windows if w["mode"] == m])
                                for m in MODES if MODES[m]},
        "events_lost": sum(w.get("events_lost", 0) for w in windows),
    }
    doc = {"benchmark": "lockbench throughput with a trace session against none, one boot",
           "unit": "lockbench acquisitions per second (user classes)", "accel": "tcg", "vcpus": 2,
           "workload": f"lockbench {LOCKBENCH}", "window_s": window_s, "margin_s": margin_s,
           "rounds": rounds, "host_cpu": qemu_launch.host_cpu_model(), "loadavg_1min_start": load_start,
           "loadavg_1min_end": round(os.getloadavg()[0], 2),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "summary": summary,
           "per_round": per_round, "windows": windows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    s = summary
    print(f"bench-trace-guest: lockbench ops/s (median) none {s['median_ops_per_s']['none']:.0f}, "
          f"spinlock {s['median_ops_per_s']['spinlock']:.0f}, all {s['median_ops_per_s']['all']:.0f}; "
          f"ratio vs none (median of {rounds} rounds): spinlock {s['median_ratio_spinlock_vs_none']}, "
          f"all {s['median_ratio_all_vs_none']}; events/s spinlock {s['median_events_per_s']['spinlock']:.0f}, "
          f"all {s['median_events_per_s']['all']:.0f}; {s['events_lost']} events lost -> {out}")
finally:
    if counters and counters.poll() is None:
        counters.kill()
    subprocess.run([vm, "stop", vmname], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(run_dir, ignore_errors=True)
PY
