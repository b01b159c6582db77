#!/usr/bin/python3
"""Boot the kernel once per lock algorithm and vCPU count and check lockbench --verify.

Each boot is `lock=LOCK init=/bin/par /bin/spinstat --info -- /bin/lockbench ... --verify`, so
every kernel spinlock and lockbench's ring-3 locks run LOCK. A boot passes when:
  - QEMU leaves with the guest's pass status (init's programs both exited 0: lockbench exits 1
    when the kernel's counts of any class differ from its own, or break the invariant
    uncontended + waits + overflow == acquisitions);
  - the guest reports the lock it was booted with, twice: spinstat --info (the
    SystemConfiguration answer, lock_algorithm_name) and lockbench's header (the boot-time
    configuration it mapped), and the vCPU count;
  - lockbench printed "kernel counters agree" for every lock class it used;
  - where its waiters slept in the kernel (pvqspin's ring-3 lock: "word waits: N slept, ...;
    word wakes: C calls, W threads woken"), every sleep ended by a wake: N == W exactly, as no
    other way out of kSysWordWait returns "woken";
  - for pvqspin booted with a spin bound (an entry pvqspin/pvqspin-spin=N), from 2 vCPUs up:
    its ring-3 waiters slept (N > 0), so a ring-3 pvqspin that spins or yields instead fails.
An entry of --locks is a lock= value, or LOCK/OPTION=VALUE[/...]: that lock booted with those
boot options as well.
Under TCG a boot takes 1 to 3 s; the console of a failed boot is printed.

With --hog, a CPU hog per host CPU (`--hog-cpus`, default all) runs beside every boot: with 3
vCPUs on a 2-CPU host the vCPU threads are preempted while they hold and wait for locks. The
hogs are stopped when the script ends, is interrupted or terminated, or its parent dies.

EXAMPLES
  PYTHONPATH=vm-images scripts/lockbench-verify.py --locks pticket,pvmcs,student --cpus 1,2,4,8
  PYTHONPATH=vm-images scripts/lockbench-verify.py --locks ticket --cpus 4 --duration-ms 2000
  PYTHONPATH=vm-images scripts/lockbench-verify.py --locks pvqspin --cpus 3 --hog
  PYTHONPATH=vm-images scripts/lockbench-verify.py --locks pvqspin,pvqspin/pvqspin-spin=256 --cpus 1,2,4,8
"""
import argparse
import ctypes
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
try:
    import qemu_launch  # vm-images/, through PYTHONPATH
except ImportError:
    sys.exit(f"lockbench-verify: vm-images' qemu_launch is not on the path: run it as "
             f"PYTHONPATH={os.path.join(ROOT, 'vm-images')} {sys.argv[0]} ...")

LOCKBENCH_CLASSES = 3  # --locks 3: one class each (user0..user2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("EXAMPLES"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default=os.path.join(ROOT, "build/kernel/spinlab.elf"))
    p.add_argument("--initrd", default=os.path.join(ROOT, "build/kernel/initrd.tar"))
    p.add_argument("--locks", required=True, help="lock= values, comma-separated; an entry LOCK/OPTION=VALUE[/...] "
                   "boots that lock with those boot options too (e.g. pvqspin/pvqspin-spin=256)")
    p.add_argument("--cpus", default="1,2,4,8", help="vCPU counts, comma-separated (default 1,2,4,8)")
    p.add_argument("--accel", default="tcg", choices=qemu_launch.ACCELS)
    p.add_argument("--duration-ms", type=int, default=300, help="lockbench's run (default 300)")
    p.add_argument("--threads-per-cpu", type=int, help="lockbench's threads per vCPU (default 2 below "
                   "8 vCPUs, else 1; see threads_per_cpu())")
    p.add_argument("--timeout", type=float, default=60, help="seconds per boot (default 60)")
    p.add_argument("--hog", action="store_true", help="run a CPU hog on each host CPU beside every boot")
    p.add_argument("--hog-cpus", type=int, default=os.cpu_count() or 1,
                   help="hogs with --hog (default: the host's CPUs)")
    a = p.parse_args(argv)
    if a.hog_cpus < 1:
        p.error(f"--hog-cpus {a.hog_cpus}: at least 1")
    a.locks = [x for x in a.locks.split(",") if x]
    for entry in a.locks:
        opts = entry.split("/")[1:]
        if not entry.split("/")[0] or any("=" not in o or o.startswith("lock=") for o in opts):
            p.error(f"--locks {entry!r}: LOCK or LOCK/OPTION=VALUE[/...], e.g. pvqspin/pvqspin-spin=256")
    try:
        a.cpus = [int(x) for x in a.cpus.split(",") if x]
    except ValueError:
        p.error(f"--cpus {a.cpus!r}: comma-separated numbers, e.g. 1,2,4,8")
    if not a.locks or not a.cpus or any(n < 1 or n > 64 for n in a.cpus):
        p.error("--locks and --cpus need at least one value each; vCPUs 1..64")
    for f in (a.kernel, a.initrd):
        if not os.path.isfile(f):
            p.error(f"{f}: no such file (run make first)")
    return a


def split_entry(entry):
    """A --locks entry LOCK[/OPTION=VALUE...] as (LOCK, [OPTION=VALUE, ...])."""
    lock, *opts = entry.split("/")
    return lock, opts


def must_sleep(entry):
    """Whether this boot's ring-3 waiters must sleep in the kernel: pvqspin given a spin bound
    (pvqspin-spin=): a small bound is reached in every boot, not only when a holder happens to
    be preempted, so a ring-3 pvqspin that never calls kSysWordWait (it spins or yields) fails."""
    lock, opts = split_entry(entry)
    return lock == "pvqspin" and any(o.startswith("pvqspin-spin=") for o in opts)


# On one vCPU a waiter runs only when the guest preempted the holder: 5 to 12 sleeps in 300 ms
# under TCG here, too few to demand one in every boot. Counted there, judged from 2 vCPUs up.
MUST_SLEEP_FROM_CPUS = 2


def problems(entry, cpus, status, out):
    """What is wrong with one boot's console `out`, as a list of sentences (empty: it passed)."""
    lock, _ = split_entry(entry)
    bad = []
    if status != qemu_launch.EXIT_PASS:
        bad.append(f"QEMU status {status}, not the guest's pass status {qemu_launch.EXIT_PASS}")
    info = re.search(r"^cpus (\d+), .*, lock (\S+), clock", out, re.M)
    if not info:
        bad.append("no configuration line from spinstat --info")
    elif (int(info.group(1)), info.group(2)) != (cpus, lock):
        bad.append(f"the guest reports {info.group(1)} CPUs, lock {info.group(2)}")
    head = re.search(r"^lockbench: \d+ threads on (\d+) CPUs, .*algorithm (\S+),", out, re.M)
    if not head or (int(head.group(1)), head.group(2)) != (cpus, lock):
        bad.append("lockbench's header does not name the booted lock and vCPUs")
    agree = len(re.findall(r"^lockbench: class id \d+: kernel counters agree", out, re.M))
    if agree != LOCKBENCH_CLASSES:
        bad.append(f"kernel counters agree for {agree} of {LOCKBENCH_CLASSES} classes")
    waits = word_waits(out)
    if must_sleep(entry) and cpus >= MUST_SLEEP_FROM_CPUS and not (waits and waits["slept"] > 0):
        bad.append("no ring-3 waiter slept in the kernel (no 'word waits: N slept' with N > 0)")
    if waits and waits["slept"] != waits["woken"]:
        bad.append(f"{waits['slept']} word waits slept but {waits['woken']} threads were woken")
    if re.search(r"^lockbench: .*word waits failed", out, re.M):
        bad.append("a word wait failed")
    return bad


def word_waits(out):
    """lockbench's word-wait counts ({slept, changed, wakes, woken}), None when it printed none."""
    m = re.search(r"^lockbench: word waits: (\d+) slept, (\d+) found the word changed; "
                  r"word wakes: (\d+) calls, (\d+) threads woken", out, re.M)
    return None if not m else dict(zip(("slept", "changed", "wakes", "woken"), map(int, m.groups())))


def _die_with_parent():
    """In a hog: SIGKILL when the script dies (prctl PR_SET_PDEATHSIG), however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def start_hogs(n):
    """n busy loops, niced as any unpinned CPU-heavy neighbour; stop_hogs ends them."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                             preexec_fn=_die_with_parent) for _ in range(n)]


def stop_hogs(hogs):
    for h in hogs:
        if h.poll() is None:
            h.kill()
    for h in hogs:
        h.wait()


def threads_per_cpu(a, cpus):
    """Two threads per vCPU contend even on one vCPU (the guest preempts one holding the lock),
    as the user self-test's lockbench run does. At 8 vCPUs on a 2-core host one thread each:
    with 16, a FIFO lock (mcs, pvmcs) queues guest threads the guest scheduler has descheduled,
    and the queue drains in 15 to 25 s instead of 1 to 3 s (measured under TCG)."""
    if a.threads_per_cpu:
        return a.threads_per_cpu
    return 2 if cpus < 8 else 1


def boot(a, entry, cpus):
    lock, opts = split_entry(entry)
    init = ("init=/bin/par /bin/spinstat --info -- /bin/lockbench --duration-ms "
            f"{a.duration_ms} --locks {LOCKBENCH_CLASSES} --pattern random "
            f"--threads-per-cpu {threads_per_cpu(a, cpus)} --verify")
    cmd = qemu_launch.qemu_command(a.kernel, cpus=cpus, memory_mb=256, append=" ".join([f"lock={lock}", *opts, init]),
                                   accel=qemu_launch.choose_accel(a.accel), initrd=a.initrd)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace", timeout=a.timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"timeout after {a.timeout:.0f} s", out


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM ends the script as Ctrl-C does, through the finally that stops the hogs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = start_hogs(a.hog_cpus) if a.hog else []
    try:
        return verify_all(a)
    finally:
        stop_hogs(hogs)


def verify_all(a):
    failed = 0
    beside = f", beside {a.hog_cpus} hogs" if a.hog else ""
    for lock in a.locks:
        for cpus in a.cpus:
            t0 = time.monotonic()
            status, out = boot(a, lock, cpus)
            name = " ".join(["lock=" + split_entry(lock)[0], *split_entry(lock)[1]])
            bad = problems(lock, cpus, status, out)
            took = time.monotonic() - t0
            acq = sum(int(n) for n in re.findall(r"^lockbench: class user\d+ \(id \d+\): (\d+) acq", out, re.M))
            if bad:
                failed += 1
                print(f"lockbench-verify: {name}, {cpus} vCPUs{beside}: FAIL ({took:.1f} s): {'; '.join(bad)}")
                print("\n".join("  | " + l for l in out.splitlines()[-40:]))
            else:
                waits = word_waits(out)
                slept = "" if not waits else f", {waits['slept']} waits slept and were woken"
                print(f"lockbench-verify: {name}, {cpus} vCPUs{beside}: ok ({took:.1f} s, {acq} acquisitions "
                      f"counted exactly{slept})", flush=True)
    print(f"lockbench-verify: {len(a.locks) * len(a.cpus) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
