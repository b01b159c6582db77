"""Lab 5 checker: the student's lock (lock=student, kernel-patch/spinlock/student_lock.h) is
exact, beats ticket under overcommit, and stays within 2x of test-and-set when not overcommitted.

RESULTS is the folder `spinlab lab start 5` wrote: one run per (lock, vCPUs, phase), found by
each run's meta.json (lock, vcpus) and its snapshots' phase, and verify/console.log, the console
of a boot running `lockbench --verify` on lock=student.

Expected observations (the worksheet's order):
  1. exact      lockbench --verify: for every lock class lockbench used, the kernel's counters
                agree with lockbench's own count ("kernel counters agree"), no disagreement, no
                panic, and lockbench finished
  2. overcommit 3 vCPUs on 2 busy cores: student makes at least 2x ticket's acquisitions per second
  3. no overcommit  2 vCPUs on an idle host: student makes at least 1/2 of tas's
"""
import glob
import os
import re

from spinlab_labs import observe
from spinlab_labs.observe import LabInputError, Observation

TITLE = "Write your own lock"
GOAL = ("Implement a spinlock in kernel-patch/spinlock/student_lock.h (boot option lock=student) that "
        "beats ticket under overcommit and stays within 2x of test-and-set when not overcommitted, and "
        "stays exact under lockbench --verify.")
MINUTES = "about 9 min"
VERIFY_ARGS = "--verify --threads-per-cpu 2 --locks 3 --pattern random --duration-ms 3000"
RUNS = [
    ("student", ["--vm.lock", "student"]),
    ("ticket", ["--vm.lock", "ticket"]),
    # not overcommitted, nothing stalls the guest's channel: the default channel timeout (lab.ini's
    # 120 s is for the overcommitted runs, and a first request sent before the guest's handler
    # runs waits all of it)
    ("student-2vcpus", ["--vm.lock", "student", "--vm.cpus", "2", "--run.phases", "idle-host",
                        "--vm.channel-timeout", "20"]),
    ("tas-2vcpus", ["--vm.lock", "tas", "--vm.cpus", "2", "--run.phases", "idle-host", "--vm.channel-timeout", "20"]),
    ("verify", ["--cpus", "3", "--timeout", "180", "--append", f"lock=student init=/bin/lockbench {VERIFY_ARGS}"],
     "vm"),
]

USER = "user"
MIN_VS_TICKET = 2.0
MIN_VS_TAS = 0.5


def _rates(results_dir: str) -> dict:
    """{(lock, vcpus, phase): (rate, acquisitions, seconds)} of the runs under results_dir."""
    out = {}
    for meta in sorted(glob.glob(os.path.join(results_dir, "*", "meta.json"))):
        if os.path.islink(os.path.dirname(meta)):  # the runner's 'latest' link to one of them
            continue
        run = observe.load_results(os.path.dirname(meta))
        for phase in run.phases:
            c = observe.counts(run, phase, USER)
            if c["seconds"]:
                key = (str(run.meta.get("lock")), int(run.meta.get("vcpus") or 0), phase)
                out[key] = (c["acquisitions"] / c["seconds"], c["acquisitions"], c["seconds"])
    return out


def _exact(results_dir: str) -> Observation:
    path = os.path.join(results_dir, "verify", "console.log")
    expected = ("lockbench --verify on lock=student: the kernel's counters agree with lockbench's count for "
                "every class, lockbench finished, no panic")
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return Observation("exact", expected, False, f"no {path}: the verify boot did not run")
    agree = re.findall(r"class id (\d+): kernel counters agree \((\d+)\)", text)
    disagree = re.findall(r"class id (\d+): the kernel counted (\d+) acquisitions, lockbench made (\d+)", text)
    panic = "PANIC" in text  # the kernel's panic banner (kern/console.cc)
    finished = re.search(r"lockbench: total \d+ ops", text) is not None
    ok = bool(agree) and not disagree and not panic and finished
    if ok:
        why = f"{len(agree)} classes agree ({', '.join(f'id {c}: {int(n):,}' for c, n in agree)})"
    else:
        why = "; ".join(filter(None, [
            f"class id {disagree[0][0]}: the kernel counted {disagree[0][1]}, lockbench made {disagree[0][2]}"
            if disagree else "", "the kernel panicked" if panic else "",
            "lockbench did not finish (a hang or a lockup? see the console)" if not finished else "",
            "no class was verified" if not agree else ""]))
    return Observation("exact", expected, ok, why)


def _compare(name: str, r: dict, mine: tuple, other: tuple, limit: float, expected: str) -> Observation:
    missing = [k for k in (mine, other) if k not in r]
    if missing:
        return Observation(name, expected, False, "no run of " + " and ".join(
            f"lock={k[0]} at {k[1]} vCPUs in {k[2]}" for k in missing))
    ratio = r[mine][0] / r[other][0] if r[other][0] else float("inf")
    seen = (f"{mine[0]}: {r[mine][0]:,.0f}/s, {other[0]}: {r[other][0]:,.0f}/s "
            f"({mine[0]} = {ratio:.2f}x {other[0]})")
    return Observation(name, expected, ratio >= limit, seen if ratio >= limit else seen + f"; below {limit:g}x")


def check(results_dir: str) -> list:
    if not os.path.isdir(results_dir):
        raise LabInputError(f"{results_dir}: no such directory")
    r = _rates(results_dir)
    if not r and not os.path.isdir(os.path.join(results_dir, "verify")):
        raise LabInputError(f"{results_dir} holds no run and no verify/ folder: lab 5 needs the folder "
                            "`spinlab lab start 5` printed")
    over = [k for k in r if k[0] == "student" and k[2] == "host-load"]
    vcpus = over[0][1] if over else 3
    return [_exact(results_dir),
            _compare("overcommit", r, ("student", vcpus, "host-load"), ("ticket", vcpus, "host-load"), MIN_VS_TICKET,
                     f"{vcpus} vCPUs on 2 busy host cores: student makes at least {MIN_VS_TICKET:g}x ticket's "
                     "acquisitions per second"),
            _compare("no overcommit", r, ("student", 2, "idle-host"), ("tas", 2, "idle-host"), MIN_VS_TAS,
                     f"2 vCPUs on an idle host: student makes at least {MIN_VS_TAS:g}x tas's acquisitions per second")]
