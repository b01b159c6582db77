#!/usr/bin/env bash
# scripts/bench-ring-event.sh: what one ring-3 spinlock event costs its thread in the guest, in
# TSC cycles per event, through the thread's ring (the user-mode logger) and through a system
# call each (kSysTraceSpinlock), under TCG and (where /dev/kvm is usable) KVM. Each round is one
# boot of a 1-vCPU guest running `lockbench --event-cost` as init: in a circular session of its
# own, batches of uncontended acquire/release pairs whose release writes no event, one through
# the ring (1,000 pairs, then the system call a full ring makes, so the kernel's take of the
# records is in their cost) and one by system call, in a rotated order; it prints the median
# per-event difference over up to 401 samples with a distribution-free 95 % interval, and fails
# unless the kernel wrote every ring event. The JSON (build/bench/ring-event.json) holds every
# boot's line and per accelerator the medians of the boots, the system call over the ring, and
# the ring event over the lock pair it rides on (per boot, so that the host's speed cancels).
# Beside them, what a running session adds to every pair, event or none (its stamps, arming and
# sampling decision): the pairs that write no event against the same pairs as if no session ran.
#
#   scripts/bench-ring-event.sh                 ROUNDS=5 (TCG), KVM_ROUNDS=3, ACCELS="tcg kvm"
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench/ring-event.json}
mkdir -p "$(dirname "$OUT")"
exec env PYTHONPATH=vm-images /usr/bin/python3 - "$OUT" "${ROUNDS:-5}" "${KVM_ROUNDS:-3}" "${ACCELS:-tcg kvm}" <<'PY'
import json, os, platform, statistics, sys, time
import qemu_launch

out, rounds, kvm_rounds, accels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
kernel, initrd = "build/kernel/spinlab.elf", "build/kernel/initrd.tar"
doc = {"benchmark": "in-guest cost of a ring-3 spinlock event: the thread's ring against a system call each "
                    "(lockbench --event-cost)",
       "unit": "guest TSC cycles per event", "host_cpu": qemu_launch.host_cpu_model(), "host_cpus": os.cpu_count(),
       "host_kernel": platform.release(), "loadavg_start": os.getloadavg(),
       "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "accels": {}}
failures = []
for req in accels:
    if req == "kvm" and (why := qemu_launch.kvm_unusable_reason()):
        print(f"bench-ring-event: no usable KVM ({why}): KVM left out", flush=True)
        continue
    accel = qemu_launch.choose_accel(req)
    boots = []
    for r in range(kvm_rounds if accel == "kvm" else rounds):
        cmd = qemu_launch.qemu_command(kernel, cpus=1, memory_mb=256, append="init=/bin/lockbench --event-cost",
                                       accel=accel, initrd=initrd)
        t0 = time.monotonic()
        b, status = qemu_launch.run_bench_boot(cmd, 600 if accel == "kvm" else 120)
        if b is None:
            failures.append(f"{accel} round {r + 1}: QEMU status {status}")
            print(f"bench-ring-event: FAIL {accel} round {r + 1} (status {status})", flush=True)
            continue
        b["seconds"] = round(time.monotonic() - t0, 1)
        boots.append(b)
        print(f"bench-ring-event: {accel} round {r + 1}: ring {b['ring_cycles_per_event']} cycles/event "
              f"({b['ring_ci95_low']}-{b['ring_ci95_high']}), system call {b['syscall_cycles_per_event']} "
              f"({b['syscall_ci95_low']}-{b['syscall_ci95_high']}); pair without an event "
              f"{b['cycles_per_pair_without_event']}, of which the session {b['session_cycles_per_pair']} "
              f"({b['session_ci95_low']}-{b['session_ci95_high']}); {b['samples']} samples, {b['ring_written']} "
              "ring events", flush=True)
    if not boots:
        continue
    med = lambda k: statistics.median(b[k] for b in boots)
    per_boot = lambda f: [f(b) for b in boots]
    over = per_boot(lambda b: b["syscall_cycles_per_event"] / b["ring_cycles_per_event"])
    pair = per_boot(lambda b: b["ring_cycles_per_event"] / b["cycles_per_pair_without_event"])
    s = {"boots": boots, "ring_cycles_per_event": med("ring_cycles_per_event"),
         "ring_boots_range": [min(per_boot(lambda b: b["ring_cycles_per_event"])),
                              max(per_boot(lambda b: b["ring_cycles_per_event"]))],
         "ring_interval": [min(b["ring_ci95_low"] for b in boots), max(b["ring_ci95_high"] for b in boots)],
         "syscall_cycles_per_event": med("syscall_cycles_per_event"),
         "syscall_interval": [min(b["syscall_ci95_low"] for b in boots), max(b["syscall_ci95_high"] for b in boots)],
         "syscall_over_ring": statistics.median(over), "syscall_over_ring_range": [min(over), max(over)],
         "ring_over_pair": statistics.median(pair), "ring_over_pair_range": [min(pair), max(pair)],
         "ring_events": sum(b["ring_written"] for b in boots), "tsc_hz": boots[0]["tsc_hz"],
         # what a running session adds to every acquire/release pair, event or none
         "session_cycles_per_pair": med("session_cycles_per_pair"),
         "session_interval": [min(b["session_ci95_low"] for b in boots), max(b["session_ci95_high"] for b in boots)],
         "cycles_per_pair_untraced": med("cycles_per_pair_untraced")}
    doc["accels"][accel] = s
    print(f"bench-ring-event: {accel}: a ring-3 event costs {s['ring_cycles_per_event']:.0f} cycles through its ring "
          f"(median of {len(boots)} boots, boots {s['ring_boots_range'][0]}-{s['ring_boots_range'][1]}, widest 95 % "
          f"interval {s['ring_interval'][0]}-{s['ring_interval'][1]}), {s['syscall_cycles_per_event']:.0f} by system "
          f"call: {s['syscall_over_ring']:.1f} times as much (boots {min(over):.1f}-{max(over):.1f}); the ring event is "
          f"{s['ring_over_pair']:.2f} lock pairs (boots {min(pair):.2f}-{max(pair):.2f}); a session adds "
          f"{s['session_cycles_per_pair']:.0f} cycles to every pair (widest interval {s['session_interval'][0]}-"
          f"{s['session_interval'][1]}) of {s['cycles_per_pair_untraced']:.0f} without one", flush=True)
doc["loadavg_end"] = os.getloadavg()
doc["failures"] = failures
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
print(f"bench-ring-event: -> {out}")
sys.exit(1 if failures else 0)
PY
