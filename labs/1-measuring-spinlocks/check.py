"""Lab 1 checker: the log2 wait table and CDF on an idle host and under host load.

Expected observations (the worksheet's "What you should observe", in its order):
  0. quiet baseline  the idle host was idle: the timeline has its vCPU threads off their host CPU
                    for less than 20% of the idle-host phase (else other programs ran, and the
                    phase is no baseline: the observations below are judged but mean little),
                    and waits >= 2^22 cycles took less than 5% of its vCPU time (else the idle
                    host already has the tail host load should add: the project's nested KVM)
  1. invariant      every lock class adds up: uncontended + waits + overflow = acquisitions,
                    but for the records in flight when the snapshot was read: the runner reads
                    the counters while the workload runs (spinlab/perfdata.h: readers see the
                    fields of a record in flight skewed), and a record counts its acquisition
                    before its wait. So per CPU and class, acquisitions may exceed the sum by at
                    most the threads that can be half-way through a record there: lockbench's
                    threads per CPU for its classes, one for a kernel class (ring 0, preemption
                    off; a frozen vCPU can stop mid-record). A class may also fall short by
                    as many: the runner's reset after the warm-up (an IPI) can land between a
                    record's two counts (ring 3, or a kernel spin_lock, which runs with
                    interrupts on). Any other difference is broken.
  2. uncontended    on an idle host a good part of the lockbench lock's acquisitions are uncontended
  3. peak           the idle host's contended waits peak in a short bucket (the uncontended peak
                    of the wait CDF): TCG 2^6..2^13 cycles, KVM 2^6..2^17
  4. tail           host load adds a tail: the share of vCPU time spent in waits >= 2^22 cycles
                    is at least 0.5% and at least 1.5x the idle host's. Time, not the number of
                    waits: on a busy shared machine the "idle" host has long waits too, and a hog
                    makes fewer but much longer ones (each bucket k counted at 1.5 * 2^k cycles,
                    the middle of its range)
  5. slices         the tail's waits are host time slices, not critical sections: their median
                    lies in 2^22..2^30 cycles (1.6 ms to 0.4 s at 2.6 GHz)
Needs a run with phases idle-host and host-load (lab 1's or lab 2's).
"""

import spinlab_report as report
from spinlab_labs import observe
from spinlab_labs.observe import Observation

TITLE = "Measuring spin-locks"
GOAL = ("Read the log2 wait table and the wait CDF of one test-and-set lock, find the uncontended "
        "peak, and explain the tail that host load adds.")
MINUTES = "about 2.5 min (estimate)"
RUNS = [(None, [])]

USER = "user"            # lockbench's lock classes (user0..user15)
TAIL_K = 22              # waits >= 2^22 cycles: preemption, not noise (docs/architecture.md)
PEAK = {"tcg": (6, 13), "kvm": (6, 17)}
# How many acquisitions are uncontended depends on how often the vCPUs run at once (a vCPU that
# runs alone wins every acquisition): 99.9 % on a busy 2-core host where they seldom do; on a
# quiet one 24.6 % in an earlier clean-clone make test, and 9.8 % in one on 2026-12-07, after the
# host's clock sampler stopped taking a vCPU's CPU about 4 % of the idle-host time (issue 52; the
# likely cause, not shown apart). The floor says only that the row counts what it should: a run
# with none uncontended has a broken counter.
MIN_UNCONTENDED = 0.02
MIN_TAIL_SHARE = 0.005
MIN_TAIL_RATIO = 1.5   # a quiet host: ~100x; beside other work at load average 5-7 here: 1.7x
SLICES = (22, 30)
MAX_IDLE_OFF = observe.BUSY_HOST
# A quiet idle host has 1 to 3 waits of 2^22 cycles per 8 s run (about 0.03 % of vCPU time,
# docs/architecture.md); the project's nested KVM, 2 host CPUs: 21 to 36 % (four runs).
MAX_IDLE_TAIL = 0.05


def _quiet(run) -> Observation:
    share = observe.off_share(run, "idle-host")
    expected = (f"idle host: the vCPU threads were off their host CPU less than {MAX_IDLE_OFF:.0%} of the time "
                f"(the host timeline), and waits >= 2^{TAIL_K} cycles took less than {MAX_IDLE_TAIL:.0%} of vCPU time")
    if share is None:
        return Observation("quiet baseline", expected, False, "the run has no host timeline of the idle-host phase "
                           "(run with [run] timeline = on)")
    n_idle, idle_tail = _tail_share(run, "idle-host")
    seen = f"off {share:.1%} of the idle-host phase; {n_idle} waits >= 2^{TAIL_K} took {idle_tail:.2%} of vCPU time"
    if share >= MAX_IDLE_OFF:
        seen += ("; other programs took the host CPUs, so the 'idle' host is no baseline: rerun on a quiet machine "
                 "(the MIT lock lab's warning that on a loaded machine 'the counts will be nonsense')")
    elif idle_tail >= MAX_IDLE_TAIL:
        seen += ("; the idle host already has the tail that host load should add, so it is no baseline (on the "
                 "project's nested KVM the vCPUs lose 13-14 % of an idle host: see the worksheet)")
    return Observation("quiet baseline", expected, share < MAX_IDLE_OFF and idle_tail < MAX_IDLE_TAIL, seen)


def _invariant(run) -> Observation:
    """The report's rule (spinlab_report.invariant_state), records in flight allowed."""
    bad, in_flight = [], 0
    threads = report.threads_per_cpu(run.meta)
    for s in run.snapshots:
        for st in s.stats:
            state, err = report.invariant_state(st, threads)
            in_flight += state == "in_flight"
            if state == "broken":
                bad.append(f"{s.name} cpu {st.cpu} {st.lock_class}: {err}")
    n = sum(len(s.stats) for s in run.snapshots)
    return Observation("invariant", "uncontended + sum(wait buckets) + overflow = acquisitions for every lock "
                       "class, CPU and repetition (but for records in flight when the counters were read)",
                       not bad and n > 0,
                       f"{n} class records checked, {len(bad)} broken"
                       + (f", {in_flight} with records in flight (acquisitions ahead or behind by at most the "
                          "threads that can be mid-record)" if in_flight else "") + (f": {bad[0]}" if bad else ""))


def _uncontended(run) -> Observation:
    c = observe.counts(run, "idle-host", USER)
    share = c["uncontended"] / c["acquisitions"] if c["acquisitions"] else 0.0
    return Observation("uncontended", f"idle host: at least {MIN_UNCONTENDED:.0%} of the lockbench lock's "
                       "acquisitions are uncontended (the table's last row)", share >= MIN_UNCONTENDED,
                       f"{c['uncontended']:,} of {c['acquisitions']:,} acquisitions uncontended ({share:.1%})")


def _peak(run) -> Observation:
    hist = observe.wait_hist(run, "idle-host", USER)
    lo, hi = PEAK.get(observe.accelerator(run), PEAK["tcg"])
    expected = (f"idle host: the most common contended wait is in a bucket from 2^{lo} to 2^{hi} cycles "
                f"({observe.accelerator(run)})")
    if hist.sum() == 0:
        return Observation("peak", expected, False, "the idle host has no contended wait at all")
    k = int(hist.argmax())
    return Observation("peak", expected, lo <= k <= hi,
                       f"the peak is bucket 2^{k} with {int(hist[k]):,} of {int(hist.sum()):,} contended waits")


def _tail_share(run, phase: str) -> tuple:
    """(waits >= 2^TAIL_K, their estimated cycles / vCPU cycles of the phase)."""
    hist = observe.wait_hist(run, phase, USER)
    n = int(hist[TAIL_K:].sum())
    cycles = sum(int(hist[k]) * 1.5 * 2 ** k for k in range(TAIL_K, len(hist)))
    vcpu_cycles = observe.counts(run, phase, USER)["seconds"] * observe.guest_hz(run) * int(run.meta.get("vcpus") or 1)
    return n, cycles / vcpu_cycles if vcpu_cycles else 0.0


def _tail(run) -> Observation:
    n_idle, idle = _tail_share(run, "idle-host")
    n_load, load = _tail_share(run, "host-load")
    ok = load >= MIN_TAIL_SHARE and load >= MIN_TAIL_RATIO * idle
    seen = (f"host load: {n_load} waits >= 2^{TAIL_K}, {load:.2%} of vCPU time; idle host: {n_idle}, {idle:.2%}")
    if load < MIN_TAIL_RATIO * idle:
        seen += "; host load did not add the tail (no more time in long waits than the idle host)"
    elif not ok:
        seen += "; too little time in long waits under host load"
    return Observation("tail", f"host load: waits >= 2^{TAIL_K} cycles take at least {MIN_TAIL_SHARE:.1%} of vCPU time, "
                       f"at least {MIN_TAIL_RATIO:g}x the idle host's share", ok, seen)


def _slices(run) -> Observation:
    hist = observe.wait_hist(run, "host-load", USER)
    tail = hist.copy()
    tail[:TAIL_K] = 0
    lo, hi = SLICES
    expected = f"host load: the median wait >= 2^{TAIL_K} cycles lies in 2^{lo}..2^{hi} (host time slices)"
    if tail.sum() == 0:
        return Observation("slices", expected, False, f"host load left no wait >= 2^{TAIL_K} cycles")
    cum = tail.cumsum()
    k = int((cum >= tail.sum() / 2).argmax())
    return Observation("slices", expected, lo <= k <= hi,
                       f"median bucket 2^{k} of {int(tail.sum())} long waits (about "
                       f"{observe.ms(2 ** k, observe.guest_hz(run))} and up)")


def check(results_dir: str) -> list:
    run = observe.load_results(results_dir)
    observe.need_phases(run, ["idle-host", "host-load"], "lab 1")
    return [_quiet(run), _invariant(run), _uncontended(run), _peak(run), _tail(run), _slices(run)]
