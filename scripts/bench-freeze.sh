#!/usr/bin/env bash
# Freeze latency (part of make bench): how long a freeze request takes to stop a spinning
# thread and a thaw request to let it run again, for the v2 freezer (cgroup.freeze on a
# threaded cgroup) and the v1 freezer (freezer.state), with no load of ours and with a
# `spinlab-load hog` on the victim's CPU. Each case runs `spinlab-load freeze` (5 ms freezes
# every 25 ms, SCHED_FIFO injector pinned to CPU 0) on one spinning fake vCPU pinned to CPU 1
# (so the injector's own wake-up never displaces it: a thread on CPU at the request is then
# stopped by the freezer, not by us) and keeps its --latency-json: min, median, p99 and max of
# the request lateness, stop, kernel notification and resume latencies
# (hypervisor-hooks/freezes/freeze_latency.h). The load average at each case is recorded beside it: the
# machine is shared, "no load of ours" is not an idle machine.
# Needs root (cgroups, tracefs). OUT= the JSON file, FREEZE_BENCH_S= seconds per case (6).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/host/bin
out=${OUT:-build/bench/freeze-latency.json}
records=${out%.json}   # the freeze records of each case, kept beside the JSON
secs=${FREEZE_BENCH_S:-6}
tmp=$(mktemp -d)
fake_pid=
hog_pid=
cleanup() {
    [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The fake vCPU exits when its stdin closes, or after its own time limit.
"$bin/spinlab-fake-vcpus" 1 $((secs * 4 + 60)) < <(sleep $((secs * 4 + 60))) > "$tmp/fake" &
for _ in $(seq 50); do [ -s "$tmp/fake" ] && break; sleep 0.1; done
read -r fake_pid _ < "$tmp/fake"
"$bin/spinlab-load" pin --qemu-pid "$fake_pid" --cpus 1 --state-dir "$tmp/s" >/dev/null 2>&1

mkdir -p "$records"
cases=()
for load in idle hog; do
    if [ "$load" = hog ]; then
        "$bin/spinlab-load" hog --cpus 1 --duration $((secs * 2 + 10)) --state-dir "$tmp/s" 2>/dev/null &
        hog_pid=$!
        sleep 0.5
    fi
    for method in v2 v1; do
        loadavg=$(cut -d' ' -f1 /proc/loadavg)
        taskset -c 0 "$bin/spinlab-load" freeze --qemu-pid "$fake_pid" --cgroup "$method" --freeze-ms 5 \
            --period-ms 25 --duration "$secs" --rt-priority 10 --state-dir "$tmp/s" \
            --out "$records/$method-$load.csv" --latency-json "$tmp/$method-$load.json" 2> "$tmp/err" ||
            { cat "$tmp/err" >&2; exit 1; }
        echo "bench: freeze $method, $load (load average $loadavg): $(grep -o 'request late.*' "$tmp/err")"
        cases+=("{\"method\":\"$method\",\"load\":\"$load\",\"loadavg\":$loadavg,\"latency\":$(cat "$tmp/$method-$load.json")}")
    done
done
mkdir -p "$(dirname "$out")"
host_cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
(IFS=,; echo "{\"host_cpu\":\"$host_cpu\",\"cpus\":$(nproc),\"kernel\":\"$(uname -r)\",\"seconds_per_case\":$secs,\"victim_cpu\":1,\"injector_cpu\":0,\"hog_cpu\":1,\"freeze_ms\":5,\"period_ms\":25,\"cases\":[${cases[*]}]}") > "$out"
/usr/bin/python3 -m json.tool "$out" > /dev/null
echo "bench: freeze latency in $out, the records in $records/"
