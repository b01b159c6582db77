#!/usr/bin/env bash
# scripts/bench-trace-event.sh: what one kernel-lock trace event costs in the guest, in TSC
# cycles per event, under TCG and (where /dev/kvm is usable) KVM. Each round is one boot of a
# 1-vCPU guest with bench=traceevent (kern/bench.h): with a circular session running, batches of
# spin_lock + spin_unlock whose release writes a spinlock event alternate with batches whose
# release writes none; the boot prints the median difference per event over up to 401 sample
# pairs and a distribution-free 95 % interval of that median, and checks that every armed
# release wrote its event. A third batch, whose hold only saves and restores the interrupt flag
# as the event's path does (pushf; cli), says what of the event is the flag's. The JSON
# (build/bench/trace-event.json) holds every boot's line, and per accelerator the median of the
# boots' medians, the range of the boots' medians, the widest of their intervals, the event's
# cost over the lock pair's and the flag's share of the event (both per boot, so that the
# host's speed cancels); the host CPU, its CPU count, the kernel and the load average too. One
# more boot per accelerator with bench=memwrite says what one ring-0 store and one 104-byte copy
# cost there (the kernel-lock event is a few hundred memory accesses).
#
#   scripts/bench-trace-event.sh                 ROUNDS=5 (TCG), KVM_ROUNDS=3, ACCELS="tcg kvm"
#   ACCELS=tcg ROUNDS=3 OUT=/tmp/te.json scripts/bench-trace-event.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench/trace-event.json}
mkdir -p "$(dirname "$OUT")"
exec env PYTHONPATH=vm-images /usr/bin/python3 - "$OUT" "${ROUNDS:-5}" "${KVM_ROUNDS:-3}" "${ACCELS:-tcg kvm}" \
    "${KERNEL:-build/kernel/spinlab.elf}" <<'PY'
import json, os, platform, statistics, sys, time
import qemu_launch

out, rounds, kvm_rounds, accels, kernel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
doc = {"benchmark": "in-guest cost of a kernel-lock trace event (bench=traceevent)",
       "unit": "guest TSC cycles per event", "kernel": kernel, "host_cpu": qemu_launch.host_cpu_model(),
       "host_cpus": os.cpu_count(), "host_kernel": platform.release(),
       "loadavg_start": os.getloadavg(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "accels": {}}
failures = []
for req in accels:
    if req == "kvm" and (why := qemu_launch.kvm_unusable_reason()):
        print(f"bench-trace-event: no usable KVM ({why}): KVM left out", flush=True)
        continue
    accel = qemu_launch.choose_accel(req)
    n = kvm_rounds if accel == "kvm" else rounds
    timeout = 600 if accel == "kvm" else 120
    boots = []
    for r in range(n):
        cmd = qemu_launch.qemu_command(kernel, cpus=1, memory_mb=256, append="bench=traceevent", accel=accel)
        t0 = time.monotonic()
        b, status = qemu_launch.run_bench_boot(cmd, timeout)
        if b is None:
            failures.append(f"{accel} round {r + 1}: QEMU status {status}")
            print(f"bench-trace-event: FAIL {accel} round {r + 1} (status {status})", flush=True)
            continue
        b["seconds"] = round(time.monotonic() - t0, 1)
        boots.append(b)
        print(f"bench-trace-event: {accel} round {r + 1}: {b['median_cycles_per_event']:.1f} cycles/event "
              f"(95 % interval {b['ci95_low']:.1f}-{b['ci95_high']:.1f}; {b['samples']} samples of "
              f"{b['batch']} events; pair {b['median_cycles_per_pair_without']:.0f} cycles without an "
              f"event, {b['median_cycles_per_pair_with_event']:.0f} with; one irq_save+irq_restore "
              f"{b['median_cycles_irq_save_restore']:.1f})", flush=True)
    if not boots:
        continue
    # What a ring-0 memory access costs under this accelerator (bench=memwrite), one boot: the
    # kernel-lock event is a few hundred of them.
    memwrite, _ = qemu_launch.run_bench_boot(
        qemu_launch.qemu_command(kernel, cpus=1, memory_mb=256, append="bench=memwrite", accel=accel), timeout)
    if memwrite:
        print(f"bench-trace-event: {accel}: a ring-0 8-byte store costs {memwrite['heap_cycles_per_store']:.1f} cycles, "
              f"a 104-byte copy {memwrite['heap_from_heap_cycles_per_104_bytes']:.1f} (bench=memwrite)", flush=True)
    meds = [b["median_cycles_per_event"] for b in boots]
    s = {"boots": boots, "median_cycles_per_event": statistics.median(meds),
         "boots_range": [min(meds), max(meds)],
         "interval": [min(b["ci95_low"] for b in boots), max(b["ci95_high"] for b in boots)],
         "events": sum(b["events_expected"] for b in boots),
         "tsc_hz": boots[0]["tsc_hz"], "memwrite": memwrite}
    s["ns_per_event"] = s["median_cycles_per_event"] / s["tsc_hz"] * 1e9
    # The event against the lock pair it rides on, per boot: the host's speed (which load moves
    # from boot to boot) cancels.
    ratios = [b["median_cycles_per_event"] / b["median_cycles_per_pair_without"] for b in boots]
    s["event_over_pair"] = statistics.median(ratios)
    s["event_over_pair_range"] = [min(ratios), max(ratios)]
    # What of it is the interrupt flag's (pushf; cli around the write): the same batch pairs.
    irq = [b["median_cycles_irq_save_restore"] / b["median_cycles_per_event"] for b in boots]
    s["irq_share_of_event"] = statistics.median(irq)
    s["irq_share_range"] = [min(irq), max(irq)]
    doc["accels"][accel] = s
    print(f"bench-trace-event: {accel}: {s['median_cycles_per_event']:.1f} cycles per kernel-lock event "
          f"({s['ns_per_event']:.0f} ns; median of {len(boots)} boots, boots {min(meds):.1f}-{max(meds):.1f}, "
          f"widest 95 % interval {s['interval'][0]:.1f}-{s['interval'][1]:.1f}), {s['events']} events; "
          f"{s['event_over_pair']:.2f} times a lock pair without one (boots {min(ratios):.2f}-{max(ratios):.2f}); "
          f"the interrupt flag's save and restore alone {s['irq_share_of_event']:.2f} of it "
          f"(boots {min(irq):.2f}-{max(irq):.2f})", flush=True)
doc["loadavg_end"] = os.getloadavg()
doc["failures"] = failures
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
print(f"bench-trace-event: -> {out}")
sys.exit(1 if failures else 0)
PY
