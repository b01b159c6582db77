#!/usr/bin/python3
"""Boot the spinlab kernel under QEMU, run its in-guest self-tests and report.

Prints the guest's console (one line per test and the closing 'N passed, N failed'), and exits
0 exactly when every test passed. A panic, a triple fault (QEMU runs with -no-reboot), a guest
that never prints its closing line, a hang (no console line for --timeout seconds) or a run
still going after --max-time is a failure with a message saying which. The hang test is on
progress, not on the total: each test prints a line, and a slow host (fair locks at 4 vCPUs on
2 busy cores take minutes) slows every test alike, while a stuck guest prints nothing.

Installed, it is `spinlab selftest` (or spinlab-selftest), and --kernel/--initrd default to the
installed guest.

EXAMPLES
  spinlab selftest --cpus 4 --suite smp,user
  vm-images/selftest.py --kernel build/kernel/spinlab.elf --cpus 4
  vm-images/selftest.py --kernel build/kernel/spinlab.elf --cpus 8 --suite sched,mem
  vm-images/selftest.py --kernel build/kernel/spinlab.elf --accel kvm --timeout 900
  vm-images/selftest.py --kernel build/kernel/spinlab.elf --append 'bogus=1' --expect-boot-error bogus
  vm-images/selftest.py --kernel build/kernel/spinlab.elf --iso build/spinlab-selftest.iso
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

import qemu_launch  # beside this script: Python puts the script's folder on the path
from spinlab_vm import config

SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed\s*$")
# The lockstat suite's line with the configuration the guest reports (SystemConfiguration).
CONFIG = re.compile(r"lockstat: config: .* lock (\S+), clock (\S+),")
DEFAULTS = {"lock": "tas", "clock": "lfence"}


def config_mismatch(lines, append):
    """What the guest's reported lock=/clock= configuration gets wrong against the command line
    it was booted with (the last of each key wins, as in the kernel), or None. A check from
    outside the guest: the in-guest test can only compare the answer with the kernel's own
    variables. Nothing to check when no lockstat suite printed its configuration."""
    m = next((CONFIG.search(l) for l in lines if CONFIG.search(l)), None)
    if not m:
        return None
    want = dict(DEFAULTS)
    for word in append.split():
        if word.startswith("init="):
            break
        key, _, value = word.partition("=")
        if key in want:
            want[key] = value
    got = {"lock": m.group(1), "clock": m.group(2)}
    bad = [f"{k} {got[k]}, booted with {k}={want[k]}" for k in ("lock", "clock") if got[k] != want[k]]
    return "; ".join(bad) or None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("EXAMPLES"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", help="multiboot kernel image (ELF32); default: build/kernel/"
                   "spinlab.elf of the source tree, PREFIX/share/spinlab/kernel/ when installed")
    p.add_argument("--initrd", help="initial ramdisk (multiboot module); default: initrd.tar "
                   "beside the default kernel, when --kernel is not given")
    p.add_argument("--iso", help="boot this GRUB ISO (vm-images/make-iso.sh) through SeaBIOS "
                   "instead of -kernel; its grub.cfg holds the command line")
    p.add_argument("--cpus", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--memory", type=int, default=256, help="guest memory in MiB (default 256)")
    p.add_argument("--suite", default="all", help="suites to run: all or a,b,c (default all)")
    p.add_argument("--accel", default="auto", choices=qemu_launch.ACCELS,
                   help="accelerator (default auto: KVM only with vmx/svm, else TCG)")
    p.add_argument("--append", default="", help="extra kernel command-line options")
    p.add_argument("--timeout", type=float, help="seconds without a new console line before the "
                   "run counts as a hang (default 60 + 10 per vCPU under TCG, 900 under KVM)")
    p.add_argument("--max-time", type=float, help="seconds before a run that still makes progress "
                   "is stopped as too slow (default 5 x --timeout)")
    p.add_argument("--log", help="also write the guest console here")
    p.add_argument("--expect-boot-error", metavar="WORD",
                   help="instead of tests: expect the kernel to refuse its command line, "
                        "naming WORD, and to exit with a failing status")
    a = p.parse_args(argv)
    if a.cpus < 1 or a.cpus > 64:
        p.error(f"--cpus {a.cpus}: must be 1..64")
    if a.kernel is None:
        if not config.DEFAULT_KERNEL.is_file():
            p.error(f"no kernel at {config.DEFAULT_KERNEL}: {config.MISSING_KERNEL_HINT}")
        a.kernel = str(config.DEFAULT_KERNEL)
        if a.initrd is None and config.DEFAULT_INITRD.is_file():
            a.initrd = str(config.DEFAULT_INITRD)
    if not os.path.exists(a.kernel):
        p.error(f"--kernel {a.kernel}: no such file (run make first)")
    return a


def watch(proc, timeout, max_time, on_line):
    """Reads proc's output lines (each to on_line) until it exits; kills it when no line came for
    `timeout` seconds (a hang) or it is still running after `max_time` (too slow).
    Returns (exit status or None, the lines, "" or why it was killed)."""
    lines = []
    t0 = time.monotonic()
    last_output = [t0]

    def pump():
        for line in proc.stdout:
            line = line.rstrip("\r\n")
            last_output[0] = time.monotonic()
            lines.append(line)
            on_line(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while True:
        try:
            status = proc.wait(timeout=min(1.0, timeout))
            reader.join(5)
            return status, lines, ""
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            silent, total = now - last_output[0], now - t0
            if silent < timeout and total < max_time:
                continue
            proc.kill()
            proc.wait()
            reader.join(2)
            why = (f"hang: no console line for {silent:.0f} s" if silent >= timeout
                   else f"too slow: still running after {total:.0f} s")
            return None, lines, why


def run(a):
    accel = qemu_launch.choose_accel(a.accel)
    timeout = a.timeout or (900 if accel == "kvm" else 60 + 10 * a.cpus)
    max_time = a.max_time or 5 * timeout
    append = a.append if a.expect_boot_error else f"selftest={a.suite} {a.append}".strip()
    cmd = qemu_launch.qemu_command(a.kernel, cpus=a.cpus, memory_mb=a.memory, append=append,
                                   accel=accel, initrd=a.initrd, iso=a.iso)
    print(f"selftest: {a.cpus} vCPUs, accel {accel}, hang after {timeout:.0f} s without output, "
          f"at most {max_time:.0f} s", flush=True)
    log = open(a.log, "w") if a.log else None
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")

    def show(line):
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    status, lines, why = watch(proc, timeout, max_time, show)
    if why:
        print(f"selftest: FAIL: {why} (last line: {lines[-1] if lines else 'none'})")
        return 1
    elapsed = time.monotonic() - t0
    if a.expect_boot_error:
        refused = any("boot:" in l and a.expect_boot_error in l for l in lines)
        if status == qemu_launch.EXIT_FAIL and refused:
            print(f"selftest: ok: the kernel refused '{a.expect_boot_error}' ({elapsed:.1f} s)")
            return 0
        print(f"selftest: FAIL: expected the kernel to refuse '{a.expect_boot_error}' "
              f"(QEMU status {status})")
        return 1
    summary = [SUMMARY.match(l) for l in lines]
    summary = [m for m in summary if m]
    if any("PANIC" in l for l in lines):
        print(f"selftest: FAIL: kernel panic (QEMU status {status})")
        return 1
    if status == 0:
        print("selftest: FAIL: the guest reset (triple fault?) before finishing")
        return 1
    if not summary:
        print(f"selftest: FAIL: the guest exited (QEMU status {status}) without a summary line "
              f"(last line: {lines[-1] if lines else 'none'!r})")
        return 1
    failed = int(summary[-1].group(2))
    if status != qemu_launch.EXIT_PASS or failed:
        print(f"selftest: FAIL: {failed} test(s) failed (QEMU status {status})")
        return 1
    if why := config_mismatch(lines, append):
        print(f"selftest: FAIL: the guest reports {why}")
        return 1
    print(f"selftest: ok in {elapsed:.1f} s")
    return 0


def main(argv=None):
    try:
        return run(parse_args(sys.argv[1:] if argv is None else argv))
    except ValueError as e:
        print(f"selftest: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"selftest: cannot start QEMU: {e} (run scripts/deps.sh)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PermissionError as e:  # no traceback for a file this user may not use
        sys.exit(f"selftest: permission denied: {e.filename or e}")
