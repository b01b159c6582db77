#!/usr/bin/env bash
# scripts/bench-guest.sh: cycles per uncontended spin_lock + spin_unlock in the guest, for every
# lock algorithm x instrumentation level (INSTRUMENT=0 baseline, 1 full, 2 counters) with the
# default clock (lfence), and the original experiment's cpuid;rdtsc clock for the instrumented
# levels.
# Each combination is one boot with bench=spinlock (kern/bench.h), which prints one line
# `BENCH {json}`; the lines, with the accelerator and the host CPU model, are collected into
# build/bench/guest-spinlock.json. Quote the medians (median_cycles).
#
#   scripts/bench-guest.sh              accel auto (TCG on the build machines)
#   ACCEL=kvm OUT=build/bench/guest-spinlock-kvm.json scripts/bench-guest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ACCEL=${ACCEL:-auto}
CPUS=${CPUS:-1}
OUT=${OUT:-build/bench/guest-spinlock.json}
mkdir -p build/bench
declare -A KDIR=([0]=build/kernel-plain [1]=build/kernel [2]=build/kernel-counters)
for i in 0 1 2; do
    make -s -C kernel-patch O="$PWD/${KDIR[$i]}" INSTRUMENT=$i -j2
done
PYTHONPATH=vm-images /usr/bin/python3 - "$ACCEL" "$CPUS" "$OUT" "${KDIR[0]}" "${KDIR[1]}" "${KDIR[2]}" <<'PY'
import json, os, subprocess, sys, time
import qemu_launch

accel_req, cpus, out, *kdirs = sys.argv[1:]
accel = qemu_launch.choose_accel(accel_req)
timeout = 300 if accel == "kvm" else 120

runs, failures = [], []
for level in (0, 1, 2):
    kernel = os.path.join(kdirs[level], "spinlab.elf")
    # Not student: lab 5's lock is whatever the student wrote (a plain tas as shipped).
    for algo in ("tas", "ticket", "mcs", "pv", "pticket", "pvmcs"):
        for clock in (("lfence",) if level == 0 else ("lfence", "cpuid")):
            append = f"bench=spinlock lock={algo} clock={clock}"
            cmd = qemu_launch.qemu_command(kernel, cpus=int(cpus), memory_mb=256, append=append,
                                           accel=accel)
            t0 = time.monotonic()
            try:
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   errors="replace", timeout=timeout)
                lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH ")]
                status = p.returncode
            except subprocess.TimeoutExpired:
                lines, status = [], "timeout"
            if status != qemu_launch.EXIT_PASS or not lines:
                failures.append(f"{append}: QEMU status {status}")
                print(f"bench-guest: FAIL {append} (status {status})", flush=True)
                continue
            r = json.loads(lines[-1][len("BENCH "):])
            r["seconds"] = round(time.monotonic() - t0, 1)
            runs.append(r)
            print(f"bench-guest: INSTRUMENT={level} lock={algo:7} clock={clock:6} "
                  f"median {r['median_cycles']:8.2f} cycles/pair", flush=True)

doc = {"benchmark": "guest uncontended spin_lock+spin_unlock", "unit": "TSC cycles per pair",
       "accel": accel, "vcpus": int(cpus), "host_cpu": qemu_launch.host_cpu_model(),
       "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": runs, "failures": failures}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
print(f"bench-guest: {len(runs)} runs, {len(failures)} failed -> {out}")
sys.exit(1 if failures else 0)
PY
