"""One LHP ground-truth run and its measurement, for the TCG and the KVM ground-truth tests.

A run is a 20 s `spinlab-run` of freeze.ini on 2 vCPUs, each pinned to its own host CPU,
running lockbench on one lock whose critical section is long (2^21 cycles, ~0.8 ms) and whose
think time is a quarter of it, so that nearly every acquisition waits about 3/4 of a critical
section (1.5 M cycles, above the 2^20 threshold) behind a holder that runs. The host condition
is one phase: a freeze of one vCPU (`freeze-30ms`: 30 ms every 100 ms by spinlab-load freeze,
which records each freeze's effective window), or a hog pinned to one vCPU's host CPU
(`host-load` with `--run.hog-cpus`: the vCPU thread is runnable but waits, the kind of
preemption KVM's steal time sees).

measure() classifies the long waits as the report does (attribution.attribute_run) and, for a freeze,
counts them against the effective windows (ground_truth.rates).
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(ROOT, "build", "host", "bin", "spinlab-run")
KERNEL = os.path.join(ROOT, "build", "kernel", "spinlab.elf")
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "vm-images"))

from spinlab_report import attribution, ground_truth, lhp, preemptors, reader  # noqa: E402

CS_CYCLES = 1 << 21
THINK_CYCLES = CS_CYCLES // 4
WORKLOAD = (f"--threads-per-cpu 1 --locks 1 --pattern same --cs-cycles {CS_CYCLES} "
            f"--think-cycles {THINK_CYCLES} --duration-ms 0")
LONG = 1 << 20

# The sets must hold enough waits to judge: at least this many behind a frozen holder, of a frozen
# waiter, and behind a running holder; a run thinner than this is made once more, with a RETRIED
# line. Only a run too thin to judge is repeated, never one whose classes are wrong.
MIN_SET = {"frozen": 3, "frozen_waiter": 3, "running": 20}

# Each vCPU pinned to its own host CPU (the first two this process may use). Unpinned, the two
# vCPU threads often shared one host CPU, where they take turns: the running vCPU takes the lock
# again and again while the other is descheduled, so long waits were few and the sets thin.
CPUS = sorted(os.sched_getaffinity(0))


def pin_args():
    return ["--vm.pin", f"{CPUS[0]},{CPUS[1]}"] if len(CPUS) >= 2 else []


def neighbour_pin_args():
    """A phase `neighbours-1` with one neighbour VM of 1 vCPU, pinned (with every VM, for the
    whole run: [neighbours] host-cpus) to vCPU 0's host CPU: the measured VM's vCPU i on the
    i-th CPU, as pin_args() puts it, and the neighbour's one vCPU on the first again."""
    return ["--neighbours.host-cpus", f"{CPUS[0]},{CPUS[1]}", "--neighbours.cpus", "1"]


NEIGHBOUR_VCPU = 0  # the measured vCPU that shares its host CPU with the neighbour's
VCPU_COMM = re.compile(r"CPU \d+/(TCG|KVM)")  # QEMU's names of its vCPU threads
HOG_COMM = "spinlab-hog"                       # spinlab-load hog's name for its processes


def make_run(out, accel="tcg", lock="tas", frozen_vcpu=0, phase="freeze-30ms", hog_vcpu=None,
             duration=20, timeout=300, extra=(), workload=WORKLOAD, export=True, pin=True):
    """Runs spinlab-run into out/gt and returns that directory. phase 'host-load' with hog_vcpu:
    the hog runs on the host CPU that vCPU hog_vcpu is pinned to; a phase 'neighbours-1': one
    neighbour VM of 1 vCPU on vCPU NEIGHBOUR_VCPU's host CPU (neighbour_pin_args)."""
    env = dict(os.environ, SPINLAB_RUN_DIR=os.path.join(out, "run"))
    pins = neighbour_pin_args() if "neighbours-1" in phase else pin_args() if pin else []
    cmd = [RUN, "--spec", os.path.join(ROOT, "experiments", "freeze.ini"), "--vm.accel", accel,
           "--vm.lock", lock, "--workload.args", workload, "--run.phases", phase, *pins,
           "--run.repetitions", "1", "--run.warmup", "1", "--run.duration", str(duration),
           "--output.dir", out, "--output.run-id", "gt", *extra]
    if "freeze" in phase:
        cmd += ["--run.freeze-vcpus", str(frozen_vcpu), *(["--trace.export", "perfetto"] if export else [])]
    if hog_vcpu is not None:
        cmd += ["--run.hog-cpus", str(CPUS[hog_vcpu])]
    strangers = set()
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        # QEMU vCPU threads of other VMs on this host (another experiment, a developer's guest)
        # and other runs' hogs: the neighbour's and the hog's ground truths name the off time
        # given to a QEMU vCPU thread or to a task called spinlab-hog, so theirs must not count as
        # this run's. Seen from /proc while the run lasts, not from the run.
        reader_thread = threading.Thread(target=lambda: out_err.append(p.communicate(timeout=timeout)))
        out_err = []
        reader_thread.start()
        while reader_thread.is_alive():
            strangers |= stranger_threads(p.pid)
            reader_thread.join(0.25)
        if not out_err:
            p.kill()
            raise AssertionError(f"spinlab-run did not end within {timeout} s")
    assert p.returncode == 0, f"spinlab-run exit {p.returncode}: {out_err[0][1][-2000:]}"
    with open(os.path.join(out, "stranger_tids.json"), "w") as f:
        json.dump(sorted(strangers), f)
    return os.path.join(out, "gt")


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def stranger_threads(ours):
    """Thread ids named like QEMU vCPU threads (CPU N/TCG, CPU N/KVM) or like spinlab-load's
    hogs (spinlab-hog) of processes that are not `ours` or its descendants."""
    found = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid, up = int(d), int(d)
        for _ in range(64):
            if up in (0, 1, ours):
                break
            up = _ppid(up)
        if up == ours:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tids:
            try:
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    comm = f.read().strip()
                    if VCPU_COMM.fullmatch(comm) or comm == HOG_COMM:
                        found.add(int(t))
            except OSError:
                pass
    return found


def measure(run_dir, frozen_vcpu=0, phase=None):
    """The run's classified long waits (of its one phase, or of `phase`), and for a freeze the
    ground-truth rates."""
    run = reader.load_run(run_dir)
    assert run.timeline is not None and run.clock is not None
    (snap,) = [s for s in run.snapshots if phase is None or s.phase == phase]
    att = attribution.attribute_run(run, LONG)
    share = att.phases[snap.phase]
    hz = json.load(open(os.path.join(run_dir, "meta.json")))["host"]["tsc_hz"]
    strangers_file = os.path.join(os.path.dirname(run_dir), "stranger_tids.json")
    strangers = set(json.load(open(strangers_file))) if os.path.exists(strangers_file) else set()
    m = {"dir": run_dir, "run": run, "share": share, "waits": share["waits"], "hz": hz, "strangers": strangers,
         "off": ground_truth.timeline_off_windows(lhp.off_index(run.timeline, snap.phase, snap.rep)),
         # who took the holder's CPU, as summary.json says it (the report's final classes)
         "preemptors": preemptors.phase_preemptors(att, [snap], run.timeline)}
    csv_path = os.path.join(run_dir, "freezes", f"{snap.phase}-r{snap.rep}.csv")
    if os.path.exists(csv_path):
        m["windows"] = ground_truth.effective_windows(open(csv_path).read(), frozen_vcpu)
        assert m["windows"], "spinlab-load recorded no effective freeze window"
        m["rates"] = ground_truth.rates(m["waits"], m["windows"], frozen_vcpu)
    return m


@contextlib.contextmanager
def scratch(prefix, what="run"):
    """A directory for a test's runs, removed afterwards (also when a run fails), or kept and
    named with SPINLAB_KEEP_RUN set, to look at a failure."""
    out = tempfile.mkdtemp(prefix=prefix)
    try:
        yield out
    finally:
        if os.environ.get("SPINLAB_KEEP_RUN"):
            print(f"\n{what} kept in {out}")
        else:
            shutil.rmtree(out, ignore_errors=True)


COLLECT = os.path.join(ROOT, "build", "host", "bin", "spinlab-collect")


def placed_by_count_rule(run_dir, phase):
    """(cpu, start_tsc) of the phase's long waits whose holders the runner took from the guest's
    counts at 2 vCPUs (experiments/runner/trace_results.h): holds began during the wait, the
    waiter's CPU took no lock of the class (kTraceSpinWaiterCpuTookNone), and the holder at the
    start was none or the one at the end, not the waiter's CPU. Read from the trace itself
    (spinlab-collect trace dump), not from the results."""
    out = set()
    snaps = os.path.join(run_dir, "snapshots")
    for name in sorted(os.listdir(snaps)):
        if not (name.startswith(phase + "-r") and name.endswith(".trace")):
            continue
        dump = subprocess.run([COLLECT, "trace", "dump", os.path.join(snaps, name)], capture_output=True,
                              text=True, timeout=120, check=True).stdout
        for line in dump.splitlines():
            if " spinlock " not in line or "long-wait" not in line:
                continue
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            start, end = f["holder_cpu_start"], f["holder_cpu_end"]
            if (int(f.get("handovers", "0")) > 0 and "waiter-cpu-took-none" in f["flags"].split(",")
                    and start in ("-", end) and end not in ("-", f["cpu"])):
                out.add((int(f["cpu"]), int(f["acquire_tsc"]) - int(f["wait_cycles"])))
    return out


def thin_sets(rates):
    return {k: rates[k] for k, n in MIN_SET.items() if rates[k] < n}


def rates_line(g, m):
    return (f"holder frozen > half the wait: {g['frozen_holder_off']}/{g['frozen']} classed holder-off, of "
            f"which {g['frozen_holder_preempted']} holder-preempted (classes {g['frozen_classes']}); holder "
            f"running: {g['running_holder_off']}/{g['running']} classed holder-off (classes "
            f"{g['running_classes']}); waiter frozen > half the wait: {g['frozen_waiter_off']}/"
            f"{g['frozen_waiter']} classed waiter-off (classes {g['frozen_waiter_classes']}); "
            f"{len(m['windows'])} effective freezes, {len(m['waits'])} long waits")


# A preemptor's ground truth must cover at least this much off time (host TSC cycles) to judge.
MIN_TRUTH_CYCLES = 10_000_000


def preemptor_truth(m, phase, vcpu, truth):
    """The preemptor's ground truth on the timeline's final classes (the column the report reads):
    (cycles the truth says `truth` took vCPU `vcpu`'s CPU, of them classed `truth`). The truth is
    independent of the classification: for a freeze, the off time inside the effective windows
    of the freeze record; for a hog, the off time whose switch-out named a task called
    `spinlab-hog` (its comm, set by spinlab-load hog; the class comes from the ledgers' pids)
    that is not another run's (m["strangers"]);
    for a neighbour VM, the off time whose switch-out named a QEMU vCPU thread (comm `CPU N/TCG`
    or `CPU N/KVM`) that is none of this VM's vCPU threads (the timeline's own tids; the class
    comes from the neighbour's thread ids that the runner passed to the timeline) nor of another
    VM's that ran on this host meanwhile (m["strangers"]: seen in /proc during the run, QEMU
    processes that spinlab-run did not start). A hog or a neighbour takes the CPU only from a
    runnable thread: off time the thread left asleep (the `reason` column, the switch-out's
    prev_state, not `R...`) is its own blocking whatever ran next (class `blocked`), and no part
    of either truth."""
    t = m["run"].timeline
    rows = t[(t["phase"] == phase) & (t["vcpu"] == vcpu) & (t["state"] != "on")]
    a = rows["start_host_tsc"].to_numpy(dtype=float)
    b = rows["end_host_tsc"].to_numpy(dtype=float)
    right = (rows["preemptor"] == truth).to_numpy()
    if truth == "freeze":
        total = got = 0.0
        for lo, hi in m["windows"]:
            ov = (np.minimum(b, hi) - np.maximum(a, lo)).clip(min=0)
            total, got = total + ov.sum(), got + ov[right].sum()
        return total, got
    if truth == "neighbour-vcpu":
        vcpu_thread = rows["preemptor_comm"].astype(str).str.fullmatch(VCPU_COMM.pattern).to_numpy()
        own = rows["preemptor_pid"].isin(set(t["tid"])).to_numpy()
        stranger = rows["preemptor_pid"].isin(m.get("strangers", set())).to_numpy()
        named = vcpu_thread & ~own & ~stranger
    else:   # another run's hogs (m["strangers"]) are host tasks to this one
        named = (rows["preemptor_comm"] == HOG_COMM).to_numpy()
        named &= ~rows["preemptor_pid"].isin(m.get("strangers", set())).to_numpy()
    runnable = rows["reason"].astype(str).str.startswith("R").to_numpy()
    named &= runnable
    d = b - a
    return float(d[named].sum()), float(d[named & right].sum())


def preemptor_line(m, truth):
    p = m["preemptors"]
    named = {k: v for k, v in p["share"].items() if v}
    return (f"the report's preemptors of the holder's off time in {p['waits']} holder-off long waits: {named} "
            f"(the load of this host included)")


def assert_preemptor(m, phase, vcpu, truth):
    """The preemptor bar: of the off time the ground truth gives to `truth` (preemptor_truth),
    >= 95 % is classed `truth`; the report's shares for the holders are printed beside (on a
    loaded host other tasks take the CPU too, so they are not judged)."""
    p = m["preemptors"]
    assert p is not None and p["column"], "timeline.csv has no preemptor column"
    total, got = preemptor_truth(m, phase, vcpu, truth)
    print(f"\n{phase}: {got / max(total, 1):.4f} of vCPU {vcpu}'s {total / m['hz'] * 1e3:.1f} ms off to "
          f"{truth} (ground truth) classed {truth}; {preemptor_line(m, truth)}"
          + (f"; {len(m['strangers'])} vCPU threads of other VMs and other runs' hogs on the host "
             f"left out of the truth"
             if m.get("strangers") else ""))
    assert total >= MIN_TRUTH_CYCLES, f"too little off time to judge the {truth} ({total} cycles)"
    assert got >= 0.95 * total, f"{truth}: {got} of {total} cycles classed right"


def assert_rates(g):
    """The three bars on the report's final classes: behind a frozen holder >= 95 % holder-off,
    behind a running holder <= 5 %, of a frozen waiter >= 95 % waiter-off."""
    assert g["frozen"] >= MIN_SET["frozen"], f"too few waits behind a frozen holder to judge: {g}"
    assert g["frozen_rate"] >= 0.95, g
    assert g["running"] >= MIN_SET["running"], f"too few waits behind a running holder to judge: {g}"
    assert g["running_rate"] <= 0.05, g
    assert g["frozen_waiter"] >= MIN_SET["frozen_waiter"], f"too few waits of a frozen waiter to judge: {g}"
    assert g["frozen_waiter_rate"] >= 0.95, g


# A stamp may lie this far inside an off interval beyond the clock's stated bound. The bound
# rests on the host TSC being one clock; on this machine (itself a VM) the TSCs of its CPUs
# disagree now and then by microseconds (QEMU's guard steps on exactly that), and 3 of 307
# stamps of one run lay up to 16 us beyond the bound.
SLACK_US = 25


def stamps_report(m, frozen_vcpu, clock, slack_us=SLACK_US):
    """The clock against the host's own records (ground_truth.stamps_off_cpu): the long waits'
    stamps inside the frozen vCPU's effective freezes, and inside their own vCPU's off intervals,
    by more than the bound plus slack_us."""
    slack = slack_us * 1e-6 * m["hz"]
    frozen = ground_truth.stamps_off_cpu(m["waits"], {frozen_vcpu: m["windows"]}, clock, slack)
    off = ground_truth.stamps_off_cpu(m["waits"], m["off"], clock, slack)
    return frozen, off


def largest_stamp_bound(m):
    """The largest bound (host cycles) that the run's clock map gives any long wait's start or
    end stamp it can place."""
    g = [t for w in m["waits"] for t in (w["start_tsc"], w["start_tsc"] + w["wait_cycles"])]
    _, bound = lhp.host_map(lhp.ClockMap(m["run"].clock), np.array(g, dtype=np.float64))
    bound = bound[np.isfinite(bound)]
    assert len(bound), "the clock places none of the long waits' stamps"
    return float(bound.max())


def assert_stamps_placed(frozen, off):
    """Enough stamps judged, and none inside (one in a hundred is left to the timeline's own
    imprecision)."""
    assert frozen["stamps"] >= 20 and off["stamps"] >= 20, (frozen, off)
    assert frozen["inside"] <= frozen["stamps"] // 100, frozen
    assert off["inside"] <= off["stamps"] // 100, off
