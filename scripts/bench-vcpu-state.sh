#!/usr/bin/env bash
# vCPU state word latency (part of make bench): how long after a vCPU thread's switch, or a
# freeze, the host's "off" word in the shared region says so
# (hypervisor-hooks/vcpu_state/vcpu_state_publisher.h). The word is written after the switch, by a poller,
# never in it: this measures by how much.
#
# Switches: two spinning fake vCPUs and a `spinlab-load hog` share host CPU 1, so the host
# scheduler switches them every few ms; `spinlab-load timeline --vcpu-state` publishes their
# words into a region file laid out as a guest would (spinlab-fake-region), with its poller
# every 1000 us and every 200 us, the publisher on CPU 0 (beside the load) and on CPU 1 (behind
# it: a fully loaded host). Latency = CLOCK_MONOTONIC_RAW after the store - the switch record's
# time. Freezes: `spinlab-load freeze --vcpu-state` (5 ms every 25 ms, SCHED_FIFO injector on
# CPU 0) on one fake vCPU on CPU 1; latency = store - the freeze or thaw request.
# Each case's --vcpu-state-latency-json (count, min, median, p99, max in us) goes into OUT with
# the load average at its start: the machine is shared. Needs root (tracefs, cgroups).
# OUT= the JSON file (build/bench/vcpu-state.json), VCPU_STATE_BENCH_S= seconds per case (5).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/host/bin
out=${OUT:-build/bench/vcpu-state.json}
secs=${VCPU_STATE_BENCH_S:-5}
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

"$bin/spinlab-fake-region" "$tmp/region" 2
# The fake vCPUs exit when their stdin closes, or after their own time limit.
limit=$((secs * 6 + 60))
"$bin/spinlab-fake-vcpus" 2 $limit < <(sleep $limit) > "$tmp/fake" &
for _ in $(seq 50); do [ -s "$tmp/fake" ] && break; sleep 0.1; done
read -r fake_pid _ < "$tmp/fake"
"$bin/spinlab-load" pin --qemu-pid "$fake_pid" --cpus 1 --all --state-dir "$tmp/s" >/dev/null 2>&1
"$bin/spinlab-load" hog --cpus 1 --duration $((secs * 5 + 20)) --state-dir "$tmp/s" 2>/dev/null &
hog_pid=$!
sleep 0.5

cases=()
summary() { grep -o 'latency from.*' "$1" | head -1; }
for cpu in 0 1; do
    for period in 1000 200; do
        loadavg=$(cut -d' ' -f1 /proc/loadavg)
        taskset -c $cpu "$bin/spinlab-load" timeline --qemu-pid "$fake_pid" --duration "$secs" \
            --vcpu-state "$tmp/region" --vcpu-state-period-us $period --state-dir "$tmp/s" \
            --vcpu-state-latency-json "$tmp/case.json" --out /dev/null 2> "$tmp/err" ||
            { cat "$tmp/err" >&2; exit 1; }
        echo "bench: vcpu-state switches, publisher on CPU $cpu, period $period us (load average $loadavg): $(summary "$tmp/err")"
        cases+=("{\"source\":\"switches\",\"publisher_cpu\":$cpu,\"period_us\":$period,\"loadavg\":$loadavg,\"latency\":$(cat "$tmp/case.json")}")
    done
done
loadavg=$(cut -d' ' -f1 /proc/loadavg)
taskset -c 0 "$bin/spinlab-load" freeze --qemu-pid "$fake_pid" --vcpus 0 --freeze-ms 5 --period-ms 25 \
    --duration "$secs" --rt-priority 10 --vcpu-state "$tmp/region" --state-dir "$tmp/s" \
    --vcpu-state-latency-json "$tmp/case.json" --out /dev/null 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
echo "bench: vcpu-state freezes, injector on CPU 0 (load average $loadavg): $(summary "$tmp/err")"
cases+=("{\"source\":\"freezes\",\"publisher_cpu\":0,\"period_us\":0,\"loadavg\":$loadavg,\"latency\":$(cat "$tmp/case.json")}")

mkdir -p "$(dirname "$out")"
host_cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
(IFS=,; echo "{\"host_cpu\":\"$host_cpu\",\"cpus\":$(nproc),\"kernel\":\"$(uname -r)\",\"seconds_per_case\":$secs,\"vcpus_cpu\":1,\"hog_cpu\":1,\"cases\":[${cases[*]}]}") > "$out"
/usr/bin/python3 -m json.tool "$out" > /dev/null
echo "bench: vcpu-state latency in $out"
