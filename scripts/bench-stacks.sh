#!/usr/bin/env bash
# scripts/bench-stacks.sh: call stacks on trace events in the guest (2 vCPUs, TCG): for lockbench
# and for kmix, a 3 s recording with stacks on spinlock, context switch, ready and profile events
# through the stack cache (the default: 256 buckets, 3 MB), then the same with the cache off.
# Reports the cache's hit rate (hits / (hits + misses + uncached), from the guest's counters)
# and the trace bytes the stacks cost per event that has one: cached (references, definitions,
# deletes, rundowns) against inline (every stack in full), both measured from the recordings,
# into build/bench/stacks.json (OUT=...).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench/stacks.json}
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$OUT" <<'PY'
import json, os, re, shutil, subprocess, sys, tempfile, time

out = sys.argv[1]
collect = "build/host/bin/spinlab-collect"
vm = "vm-images/spinlab-vm"
workloads = {
    "lockbench": "init=/bin/lockbench --duration-ms 0 --locks 2 --pattern random",
    "kmix": "init=/bin/kmix --duration-ms 0",
}
SIZES = {"stack-def": 48, "stack-ref": 48, "stack-delete": 48, "stack-rundown": 48, "stack-walk": 48}

def stack_bytes(dump):
    """Bytes of the stack events, and the events that carry a stack with their depths."""
    total, depths = 0, []
    for line in dump.splitlines():
        if line.startswith("#"):
            continue
        f = line.split()
        kind = f[4]
        if kind not in SIZES:
            continue
        depth = int(re.search(r" depth=(\d+)", line)[1])
        nframes = depth if kind != "stack-ref" else 0
        total += SIZES[kind] + 8 * nframes
        if kind in ("stack-ref", "stack-walk"):
            depths.append(depth)
    return total, depths

results = []
for name, append in workloads.items():
    run_dir = tempfile.mkdtemp(prefix="spinlab-stackbench-")
    env = dict(os.environ, SPINLAB_RUN_DIR=run_dir)
    vmname = f"sb{os.getpid()}{name[:3]}"
    try:
        subprocess.run([vm, "start", vmname, "--cpus", "2", "--accel", "tcg", "--append", append],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        args = ["--vm", vmname, "--run-dir", run_dir, "--timeout", "20000"]
        deadline = time.time() + 120
        while subprocess.run([collect, "trace", "status", *args], env=env, capture_output=True).returncode:
            if time.time() > deadline:
                raise SystemExit(f"bench-stacks: the {name} guest never answered")
            time.sleep(0.5)
        row = {"workload": name}
        for caching in ("on", "off"):
            path = os.path.join(run_dir, f"{caching}.trace")
            subprocess.run([collect, "trace", "record", *args, "--enable", "spinlock,long-wait,cswitch,ready,profile",
                            "--stack-enable", "spinlock,long-wait,cswitch,ready,profile", "--stack-caching", caching,
                            "--duration", "3", "--flush-timer", "50", "-o", path],
                           env=env, check=True, capture_output=True)
            status = subprocess.run([collect, "trace", "status", *args], env=env, check=True,
                                    capture_output=True, text=True).stdout
            counters = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", status.split("stack cache", 1)[1])}
            lost = int(re.search(r"EventsLost\s+(\d+)", status)[1])
            dump = subprocess.run([collect, "trace", "dump", path], check=True, capture_output=True, text=True).stdout
            nbytes, depths = stack_bytes(dump)
            full = sum(48 + 8 * d for d in depths)  # every one of those stacks inline
            r = {"events_with_stack": len(depths), "events_lost": lost,
                 "mean_depth": round(sum(depths) / len(depths), 2) if depths else 0,
                 "stack_bytes": nbytes, "stack_bytes_per_event": round(nbytes / len(depths), 1) if depths else 0,
                 "inline_bytes_per_event_computed": round(full / len(depths), 1) if depths else 0,
                 "counters": counters}
            if caching == "on":
                looked = counters["hits"] + counters["misses"] + counters["uncached"]
                r["hit_rate"] = round(counters["hits"] / looked, 4) if looked else None
            row["cache_" + caching] = r
            print(f"bench: stacks {name} caching {caching}: {json.dumps(r)}", flush=True)
        results.append(row)
    finally:
        subprocess.run([vm, "stop", vmname], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(run_dir, ignore_errors=True)
json.dump({"accelerator": "tcg", "cpus": 2, "results": results}, open(out, "w"), indent=1)
print(f"bench: stacks -> {out}")
PY
