#!/usr/bin/env bash
# make bench: every benchmark, JSON into build/bench/. Ratios are measured within one run
# (instrumented vs plain, region vs channel); the machine is noisy, so each reports medians of
# repetitions. The host CPU model and accelerator are recorded beside the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench
mkdir -p "$out"
bin=build/host/bin
host_cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "bench: host CPU: $host_cpu"
# KVM's benchmarks run where /dev/kvm makes a VM (vm-images/qemu_launch.py, kvm_unusable_reason)
kvm_why=$(PYTHONPATH=vm-images /usr/bin/python3 -c 'import qemu_launch; print(qemu_launch.kvm_unusable_reason() or "")')

echo "bench: spinlock algorithms on the host (plain vs counters vs full instrumentation)"
$bin/spinlock_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/spinlock-host.json" --benchmark_out_format=json \
    --benchmark_context=host_cpu="$host_cpu" --benchmark_context=accelerator=native

echo "bench: snapshot of 8 vCPUs' counters: shared region vs control channel"
$bin/collector_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/collector.json" --benchmark_out_format=json \
    --benchmark_context=host_cpu="$host_cpu"

echo "bench: trace events: cycles per spinlock event written (timestamp included); buffers taken"
echo "       from a /dev/shm trace area and copied to /dev/null (events/s, MB/s, lost) at several producer rates"
$bin/locktrace_benchmark --benchmark_out="$out/trace.json" --benchmark_out_format=json \
    --benchmark_context=host_cpu="$host_cpu" --benchmark_context=accelerator=native

echo "bench: trace recording: the collector's TraceRecorder writing a trace file in $out from a /dev/shm"
echo "       region (events/s, MB/s, lost, recorder CPU ns per event) at several offered rates; its parts alone"
SPINLAB_BENCH_DIR="$out" $bin/trace_recorder_benchmark --benchmark_out="$out/trace-recorder.json" \
    --benchmark_out_format=json --benchmark_context=host_cpu="$host_cpu" \
    --benchmark_context=host_cpus="$(nproc)" --benchmark_context=accelerator=native
/usr/bin/python3 scripts/bench-recorder-summary.py "$out/trace-recorder.json"

echo "bench: the LTTng-UST anchor: cycles per user-space event of the same size (80-byte payload) in the writing"
echo "       thread, LTTng-UST recording to a file against spinlab's user-mode logger, natively, in one run (a ratio)"
scripts/deps.sh bench
OUT="$out/trace-user-anchor.json" BIN="$bin" scripts/bench-lttng-anchor.sh

echo "bench: a kernel-lock trace event's cost in the guest, cycles per event with its interval (TCG; KVM where usable)"
ROUNDS=7 KVM_ROUNDS=3 OUT="$out/trace-event.json" scripts/bench-trace-event.sh

echo "bench: a ring-3 lock's trace event in the guest, cycles per event through its thread's ring and by system call (TCG; KVM where usable)"
ROUNDS=5 KVM_ROUNDS=3 OUT="$out/ring-event.json" scripts/bench-ring-event.sh

echo "bench: trace sessions in the guest: lockbench ops/s with a session (spinlock group; all groups) against none,"
echo "       its events through each thread's ring; again with a system call each; again writing none (timing and sampling alone)"
OUT="$out/trace-guest.json" scripts/bench-trace-guest.sh
TRACE_VIA=syscall OUT="$out/trace-guest-syscall.json" scripts/bench-trace-guest.sh
TRACE_VIA=drop OUT="$out/trace-guest-drop.json" scripts/bench-trace-guest.sh
if [ -z "$kvm_why" ]; then
    for via in ring syscall drop; do
        ROUNDS=3 ACCEL=kvm TRACE_VIA=$via OUT="$out/trace-guest-kvm-$via.json" scripts/bench-trace-guest.sh
    done
else
    echo "bench: no usable KVM ($kvm_why): lockbench under KVM left out"
fi

echo "bench: a kernel lock's trace events in the guest: kmix throughput with the spinlock group against none"
ROUNDS=7 WORKLOAD=kmix ACCEL=tcg OUT="$out/trace-guest-kmix-tcg.json" scripts/bench-trace-guest.sh
if [ -z "$kvm_why" ]; then
    ROUNDS=7 WORKLOAD=kmix ACCEL=kvm OUT="$out/trace-guest-kmix-kvm.json" scripts/bench-trace-guest.sh
else
    echo "bench: no usable KVM ($kvm_why): kmix under KVM left out"
fi

echo "bench: call stacks: cycles per frame-pointer walk (depth 8/16/32), per event stack cached vs inline"
$bin/stack_benchmark --benchmark_out="$out/stack-host.json" --benchmark_out_format=json \
    --benchmark_context=host_cpu="$host_cpu" --benchmark_context=accelerator=native

echo "bench: call stacks in the guest: stack cache hit rate and trace bytes per stack on lockbench, kmix"
OUT="$out/stacks.json" scripts/bench-stacks.sh

echo "bench: freeze latency (v1/v2 freezer, with and without a hog on the victim's CPU)"
OUT="$out/freeze-latency.json" scripts/bench-freeze.sh

echo "bench: vCPU state word latency: from a vCPU thread's switch or freeze to the host's store of its 'preempted' word"
OUT="$out/vcpu-state.json" scripts/bench-vcpu-state.sh

echo "bench: report scaling: spinlab-report on synthetic runs (4/16/64 vCPUs x 10k/100k/1M long waits, 2 phases"
echo "       x 6 x 60 s, traces and timelines): wall time and peak memory per report, goal 64 vCPUs / 1M < 30 s, < 2 GB"
/usr/bin/python3 analysis/bench/bench_report.py --out "$out"

echo "bench: Linux guest (Debian's kernel, TCG, 2 vCPUs): what the slow-path probe costs per wait, and the"
echo "       workloads' throughput traced against untraced within each boot (vm-images/linux/README.md)"
vm-images/linux/spinlab-linux fetch && vm-images/linux/spinlab-linux initramfs &&
    vm-images/linux/spinlab-linux measure cost --rounds 3 --seconds 20 --phases 10 --out "$out/linux-probe" &&
    cp "$out/linux-probe/measure.json" "$out/linux-probe-cost.json"

if [ -x scripts/bench-guest.sh ]; then
    echo "bench: spinlock algorithms in the guest"
    OUT="$out/guest-spinlock.json" scripts/bench-guest.sh
fi
echo "bench: results in $out/"
ls -1 "$out"/*.json
