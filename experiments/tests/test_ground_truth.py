"""LHP attribution against ground truth on a real guest (TCG), and the clock it rests on.

One spinlab-run of 10 s phases: 2 vCPUs under TCG, each pinned to its own host CPU, running lockbench on
one lock, vCPU 0 frozen 30 ms every 100 ms by spinlab-load freeze, which records each freeze's
effective window (when the vCPU thread was seen to stop and to run again). The critical section
is long (2^21 cycles, ~0.8 ms) and the think time a quarter of it, so that nearly every
acquisition waits about 3/4 of a critical section (1.5 M cycles, above the 2^20 threshold)
behind a holder that runs: the "running" set below then holds thousands of waits, not a
handful. (With think = critical section, as before, the two threads fell into step and seldom
waited long; that set held 0 to 8 waits, and one loaded make test failed on 0.) Then:

- clock.json: the bracket-envelope method, the stated bound, and a drift that is not the steps
  (QEMU TCG reads the host TSC for the guest; its offset steps, which the piecewise mapping
  follows and bounds, but the rates agree): when stated, |drift| < 20 ppm and the true drift
  (0) within the bound clock.json states for it; beside a busy process, where QEMU's steps
  creep through most of the run, clock.json may say it is not measured, and why.
- the clock against the host's own records (ground_truth.stamps_off_cpu): every long wait
  starts and ends with TSC reads by its vCPU, so mapped to the host no stamp may lie inside one
  of that vCPU's effective freezes or off intervals by more than the bound. This is what fails
  when the clock is wrong: the two sets below are chosen through the same mapping as the class,
  so a wrong offset moves a wait and its verdict together.
- ground truth (ground_truth.rates): of the long waits on vCPU 1 whose holder is vCPU 0 and that
  effective freezes cover for more than half of the wait, at least 95% are classed holder-off
  (holder-preempted, or both: the waiter's vCPU thread was also off for half of the wait; on a
  loaded host it is, and then 'both' is the truth; the strict holder-preempted count is printed
  beside); of those whose holder was never frozen and ran for 90% of the wait by the timeline,
  at most 5% are. And for the waiter's side: of the long waits on vCPU 0 itself that its
  effective freezes cover for more than half of the wait, at least 95% are classed waiter-off
  (waiter-preempted, or both). The three rates are printed.

- the Perfetto export of the same run (`[trace] export = perfetto`) puts the guest's waits and
  the host's vCPU tracks on one time axis: each long wait's slice starts where the analysis
  placed it (within the clock's bound), and the frozen vCPU's track is 'frozen' at the middle of
  each effective freeze; the axis is host TSC at the host's TSC Hz, not the guest's.

- the preemptor (timeline.csv's column, which the report shares out): of the off time the ground
  truth gives to the freeze (inside its effective windows), >= 95 % is classed `freeze`; in a
  second phase, host-load with a hog pinned to vCPU 1's host CPU, of the off time a runnable
  switch-out gave to a task named spinlab-hog, >= 95 % is classed `hog` (from the ledgers' pids;
  a switch-out that left the thread asleep is class `blocked`, whatever ran next). The
  report's shares for the preempted holders are printed, not judged: on a loaded host other
  tasks take the CPU too. In a third phase, `neighbours-1`, one neighbour VM of 1 vCPU runs
  pinned to vCPU 0's host CPU: of the off time the switch-out gave to a QEMU vCPU thread
  (`CPU N/TCG`) that is not one of this VM's, >= 95 % is classed `neighbour-vcpu`.

- halted against blocked (the guest's halt record, halts.csv): in a second, idle run (lockbench
  rounds of 1 ms, 500 ms apart, kmix off) each vCPU thread sleeps because its guest halted, and
  >= 95 % of that sleep lies where the record surely places a halt; in the freeze phase the other
  vCPU's sleep (QEMU's global lock: its guest spins and never idles) lies <= 5 % where a halt is
  possible.

- hand-overs placed by the guest's counts: in a third run (12 s, unpinned) the lock changes hands
  often (critical sections and think times of 200 cycles, as in the default spec), so a holder
  wins and lets go many times during one wait and most waits' holders come from the runner's
  2-vCPU rule (trace_results.h: holds began, the waiter's CPU took none), read from the trace;
  those behind a frozen holder must be >= 95 % holder-off, behind a running one <= 5 % (judged
  on at least 5 and 8 of them; fewer: not judged, said so).

Needs `make build` and root (cgroup freezer, tracefs). About 80 s on a 2-core host (three 10 s
phases, ~15 s for the idle run and ~15 s for the hand-over run; 20 s phases gave 93 waits behind a frozen holder, 77 of a frozen waiter and 5,684 behind
a running one where MIN_SET asks 3, 3 and 20; a thin run is made once more).
"""
import bisect
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import gt_run  # noqa: E402  (the run and its measurement, shared with the KVM test)
from gt_run import MIN_SET  # noqa: E402


# vCPU 0 publishes the guest's TSC (on its tick), so its freezes leave gaps in the clock's
# samples; freezing vCPU 1 instead was worse (one run: 2 of 24 samples kept, the guest's tick on
# CPU 0 held up while vCPU 1 was frozen). The KVM test freezes vCPU 1 as well.
FROZEN_VCPU = 0
# The second phase, host-load with a hog pinned to vCPU 1's host CPU: the preemptor's ground truth
# for a hog (vCPU 1, not 0: vCPU 0's tick publishes the guest's TSC for the clock).
HOG_VCPU = 1


def make_run(out):
    return gt_run.make_run(out, accel="tcg", lock="tas", frozen_vcpu=FROZEN_VCPU, timeout=300, duration=10,
                           phase="freeze-30ms, host-load, neighbours-1", hog_vcpu=HOG_VCPU)


def measure(run_dir):
    m = gt_run.measure(run_dir, FROZEN_VCPU, "freeze-30ms")
    m["hog"] = gt_run.measure(run_dir, FROZEN_VCPU, "host-load")
    m["neighbour"] = gt_run.measure(run_dir, FROZEN_VCPU, "neighbours-1")
    return m


@pytest.fixture(scope="module")
def measured():
    for p in (gt_run.RUN, gt_run.KERNEL):
        if not os.path.exists(p):
            pytest.fail(f"{p} missing: run `make build` first")
    with gt_run.scratch("spinlab-gt-") as out:
        m = measure(make_run(os.path.join(out, "1")))
        thin = gt_run.thin_sets(m["rates"])
        if thin:
            print(f"\nRETRIED LHP ground-truth run: too few waits to judge in {thin} (need {MIN_SET}); once more")
            m = measure(make_run(os.path.join(out, "2")))
        yield m


@pytest.fixture(scope="module")
def run_dir(measured):
    return measured["dir"]


def test_clock_json_states_method_bound_and_drift(run_dir, measured):
    c = json.load(open(os.path.join(run_dir, "clock.json")))
    hz = measured["hz"]
    drift = (f"drift {c['drift_ppm']:.2f} +- {c['drift_bound_ppm']:.2f} ppm from {c['drift_segments']} step-free "
             f"segments" if c["drift_measured"] else f"drift not measured ({c['drift_note']})")
    print(f"\nclock: {c['method']}, {drift}, agreeing segments cover {c['drift_coverage']:.0%}, offset steps "
          f"{c['offset_steps_cycles']:.0f} cycles, noise floor {c['noise_floor_cycles'] / hz * 1e6:.2f} us, bound "
          f"median {c['bound_median_cycles'] / hz * 1e6:.2f} us, max {c['bound_max_cycles'] / hz * 1e6:.1f} us, "
          f"{c['samples']} of {c['samples_taken']} samples (rejected {c['rejected']}, {c['samples_missed']} attempts "
          f"saw no publication)")
    assert c["method"] == "bracket-envelope"
    assert c["host_tsc_hz"] == hz  # the rate of the host side, for the exports' time axis
    # Under TCG the guest TSC is the host's plus QEMU's offset, so the true drift is 0: a rate that
    # is stated must hold 0 within its bound, and be below 20 ppm, the accuracy the clock mapping is
    # meant to reach. Beside a busy unpinned process QEMU's guard lowers the offset through nearly
    # every segment (a creep of -4 to -155 ppm); the rule before took a rate from the segments that
    # happened to agree and stated -17.5 +- 0.45, -58 to -166 +- ~1 and -460.7 +- 2.45 ppm on such
    # runs. Now a rate is stated only when the segments that agree on it cover most of the run;
    # otherwise clock.json says it is not measured and why.
    if c["drift_measured"]:
        assert c["drift_segments"] >= 2 and c["drift_coverage"] >= 2 / 3, c
        assert abs(c["drift_ppm"]) <= c["drift_bound_ppm"] + 1e-9, c["drift_ppm"]
        assert abs(c["drift_ppm"]) < 20, c["drift_ppm"]
    else:
        assert c["drift_ppm"] == 0 and c["drift_note"], c
        assert "drift_bound_ppm" not in c
    assert c["samples"] >= 2 and len(c["points"]) == c["samples"]
    assert c["samples_taken"] == c["samples"] + sum(c["rejected"].values())
    # Every point's own bracket (its half width less the noise floor) is within the limit applied.
    assert all(2 * (p[2] - c["noise_floor_cycles"]) <= c["bracket_limit_cycles"] + 1 for p in c["points"])


SLACK_US = gt_run.SLACK_US


def stamps_report(m, clock, slack_us=SLACK_US):
    return gt_run.stamps_report(m, FROZEN_VCPU, clock, slack_us)


def test_clock_places_stamps_where_their_vcpu_ran(measured):
    frozen, off = stamps_report(measured, measured["run"].clock)
    _, strict = stamps_report(measured, measured["run"].clock, 0)
    hz = measured["hz"]
    print(f"\nclock against the host's records: {frozen['inside']} of {frozen['stamps']} stamps of vCPU "
          f"{FROZEN_VCPU} inside its effective freezes, {off['inside']} of {off['stamps']} inside their "
          f"vCPU's off intervals by more than the bound + {SLACK_US} us ({strict['inside']} beyond the bound "
          f"alone, the deepest by {off['worst_cycles'] / hz * 1e6:.1f} us)")
    gt_run.assert_stamps_placed(frozen, off)


def test_ground_truth_rates(measured):
    print(f"\nground truth: {gt_run.rates_line(measured['rates'], measured)}")
    gt_run.assert_rates(measured["rates"])


def test_preemptor_of_a_frozen_holder_is_the_freeze(measured):
    gt_run.assert_preemptor(measured, "freeze-30ms", FROZEN_VCPU, "freeze")


def test_the_other_vcpus_sleep_during_a_freeze_is_blocked_with_no_preemptor(measured):
    """Under MTTCG a frozen vCPU thread can stall the other (it may be frozen holding QEMU's global
    lock, which the other takes at its next pause): the other vCPU's thread then sleeps. Its
    switch-outs that left it asleep (timeline.csv's reason: not runnable) are `blocked`, never the
    freeze nor the next task; none of its rows is `freeze` (only the frozen vCPU's are). How much
    of its off time during the freezes was asleep is printed: QEMU's own lock-holder preemption."""
    import csv
    other = 1 - FROZEN_VCPU
    with open(os.path.join(measured["dir"], "timeline.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["phase"] == "freeze-30ms"]
    mine = [r for r in rows if int(r["vcpu"]) == other and r["state"] == "off"]
    asleep = [r for r in mine if r["reason"] and not r["reason"].startswith("R") and r["reason"] not in ("start", "unknown")]
    freezes = [(int(r["start_host_tsc"]), int(r["end_host_tsc"])) for r in rows
               if int(r["vcpu"]) == FROZEN_VCPU and r["state"] == "frozen"]
    inside = lambda r: sum(max(0, min(b, int(r["end_host_tsc"])) - max(a, int(r["start_host_tsc"]))) for a, b in freezes)
    off_in = sum(inside(r) for r in mine)
    print(f"\nvCPU {other} during vCPU {FROZEN_VCPU}'s freezes: {off_in / measured['hz'] * 1e3:.1f} ms off, "
          f"{sum(inside(r) for r in asleep) / measured['hz'] * 1e3:.1f} ms of it asleep ({len(asleep)} switch-outs "
          f"asleep in the phase)")
    assert all(r["preemptor"] == "blocked" for r in asleep), {r["preemptor"] for r in asleep}
    assert not [r for r in mine if r["preemptor"] == "freeze"]
    assert all(r["preemptor"] != "blocked" for r in mine if r["reason"].startswith("R"))


def test_preemptor_of_a_holder_beside_a_pinned_hog_is_the_hog(measured):
    gt_run.assert_preemptor(measured["hog"], "host-load", HOG_VCPU, "hog")


def test_preemptor_of_a_holder_beside_a_pinned_neighbour_vm_is_that_vm(measured):
    gt_run.assert_preemptor(measured["neighbour"], "neighbours-1", gt_run.NEIGHBOUR_VCPU, "neighbour-vcpu")


def test_a_clock_1ms_off_either_way_is_caught(measured):
    # The same run through a clock.json moved 1 ms beyond the bound that the analysis applies at
    # every stamp, too late or too early: the stamps land inside off intervals, and the check above
    # fails (checked by hand on kept runs: +-100 us fails it too when the bound is small; the two
    # rates do not notice even 10 ms). The bound at a stamp is its segment's: the points' half
    # brackets plus the segment's offset step (lhp.host_map), and QEMU's steps make that up to
    # several ms on a busy TCG host, where a plain 1 ms shift hides inside it, as it should. So
    # every point moves by 1 ms plus the largest bound at any stamp, which leaves each segment's
    # step, and so each stamp's bound, as it was. (Moving each point by 1 ms plus its own half
    # bracket, as before, left most stamps inside their segment's bound on a loaded CI host:
    # 9 of 15,132 caught, the deepest 433 us beyond its bound.) Caught: 2.2-2.5 % of the stamps
    # on a quiet host, 12-24 % in three runs beside a busy loop (largest bounds 9 us to 4.7 ms),
    # against the 1 % the check allows.
    hz = measured["hz"]
    shift = hz // 1000 + gt_run.largest_stamp_bound(measured)
    for sign in (1, -1):
        clock = dict(measured["run"].clock)
        clock["points"] = [[g, o + sign * shift, h] for g, o, h in clock["points"]]
        _, off = stamps_report(measured, clock)
        assert off["inside"] > off["stamps"] // 100, (sign, shift / hz * 1e6, off)


def perfetto_tracks(path):
    """(events, {process name: pid}, otherData) of spinlab's Chrome trace-event JSON."""
    doc = json.load(open(path))
    pids = {e["args"]["name"]: e["pid"] for e in doc["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_name"}
    return doc["traceEvents"], pids, doc["otherData"]


def test_perfetto_export_puts_guest_waits_and_host_vcpus_on_one_axis(run_dir, measured):
    # ts is host TSC / the host's TSC Hz (meta.json's), in us, for guest and host tracks alike;
    # never the guest's Hz (2,599.81 MHz against the host's 2,600.00 on one host: 73 ppm, which
    # at a host TSC of an hour's uptime is 260 ms, far beyond any bound below).
    ev, pids, other = perfetto_tracks(os.path.join(run_dir, "trace-export", "freeze-30ms-r1.json"))
    hz = measured["hz"]
    assert other["axis_tsc_hz"] == hz, (other, hz)
    assert "host vCPUs" in pids and "guest threads (spinlock waits)" in pids, pids
    starts = sorted(e["ts"] for e in ev if e.get("pid") == pids["guest threads (spinlock waits)"] and e.get("ph") == "X")
    placed = [w for w in measured["waits"] if w.get("host_start") is not None and w.get("bound_cycles") is not None]
    assert len(placed) >= 20, len(placed)
    misplaced = 0
    for w in placed:
        want, tol = w["host_start"] * 1e6 / hz, w["bound_cycles"] * 1e6 / hz + 1.0
        i = bisect.bisect_left(starts, want - tol)
        misplaced += not (i < len(starts) and starts[i] <= want + tol)
    frozen = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("pid") == pids["host vCPUs"]
                    and e.get("tid") == FROZEN_VCPU and e.get("ph") == "X" and e.get("name") == "frozen")
    fs = [a for a, _ in frozen]
    mids = [(a + b) / 2 * 1e6 / hz for a, b in measured["windows"]]
    span = (min(fs), max(b for _, b in frozen)) if frozen else (0, 0)
    mids = [m for m in mids if span[0] <= m <= span[1]]
    outside = sum(not (0 <= (i := bisect.bisect_right(fs, m) - 1) and frozen[i][1] >= m) for m in mids)
    print(f"\nperfetto: {len(placed) - misplaced} of {len(placed)} long waits where the analysis put them; "
          f"{len(mids) - outside} of {len(mids)} effective freezes inside a 'frozen' slice of vCPU {FROZEN_VCPU}")
    assert misplaced == 0
    assert len(mids) >= 20 and outside == 0


def _asleep_inside_halts(m, phase, vcpu, which, within=None):
    """(asleep cycles, of them inside the vCPU's recorded halts) in one phase of the run: the off rows
    whose thread went to sleep by itself (preemptor `blocked`), against halts.csv mapped onto the
    host through the run's clock (lhp.halt_index): which = 0 surely halted, 1 possibly halted.
    within: only the asleep time inside these host intervals."""
    import numpy as np
    from spinlab_report import lhp
    run = m["run"]
    rows = run.timeline[(run.timeline["phase"] == phase) & (run.timeline["vcpu"] == vcpu)
                        & (run.timeline["state"] == "off") & (run.timeline["preemptor"] == "blocked")]
    s, e, _ = lhp.interval_union(rows["start_host_tsc"].to_numpy(dtype=np.float64),
                                 rows["end_host_tsc"].to_numpy(dtype=np.float64))
    if within is not None:
        ws, we, _ = lhp.interval_union(*(np.array(x, dtype=np.float64) for x in zip(*within)))
        s, e = lhp.interval_minus(s, e, *lhp.interval_minus(s, e, ws, we))  # A and W: A less (A less W)
    halts = lhp.halt_index(run.halts, lhp.ClockMap(run.clock)).get(vcpu)
    asleep = float((e - s).sum())
    if halts is None:
        return asleep, 0.0
    hs, he = halts[which]
    rest_s, rest_e = lhp.interval_minus(s, e, hs, he)
    return asleep, asleep - float((rest_e - rest_s).sum())


def test_the_other_vcpus_sleep_during_a_freeze_is_not_a_halt(measured):
    """The blocked side of halted against blocked: lockbench's threads never sleep (one per vCPU,
    spinning, kmix off), so the other vCPU's guest has work all through the freezes and its thread's
    sleep then is QEMU's (its global lock, held by the frozen thread), not a halt. Of that sleep, at
    most 5 % may lie where the guest's halt record (halts.csv) places a possible halt."""
    run = measured["run"]
    assert run.halts is not None, "the run wrote no halts.csv: the guest records its halts (perfdata.h HaltLog)"
    other = 1 - FROZEN_VCPU
    freezes = [(int(r.start_host_tsc), int(r.end_host_tsc)) for r in run.timeline.itertuples()
               if r.phase == "freeze-30ms" and r.vcpu == FROZEN_VCPU and r.state == "frozen"]
    asleep, halted = _asleep_inside_halts(measured, "freeze-30ms", other, 1, within=freezes)
    hz = measured["hz"]
    print(f"\nvCPU {other} asleep during the freezes: {asleep / hz * 1e3:.1f} ms, of it possibly halted "
          f"{halted / hz * 1e3:.2f} ms")
    if asleep < MIN_HALT_TRUTH_CYCLES:
        pytest.skip(f"not judged: vCPU {other} slept only {asleep / hz * 1e3:.2f} ms during the freezes")
    assert halted <= 0.05 * asleep


# An idle guest: lockbench's rounds last 1 ms with 500 ms between them in which no workload thread
# runs, kmix off, so each vCPU has nothing to run >99 % of the time and halts (the scheduler's idle
# loop). Its thread's sleep is then the guest's halt.
IDLE_WORKLOAD = "--threads-per-cpu 1 --locks 1 --cs-cycles 200 --think-cycles 200 --duration-ms 1 --rounds 0 --pause-ms 500"
MIN_HALT_TRUTH_CYCLES = 5_000_000  # judged only on at least this much sleep (~2 ms)


@pytest.fixture(scope="module")
def idle_run():
    with gt_run.scratch("spinlab-gt-idle-", "idle run") as out:
        cmd = [gt_run.RUN, "--spec", os.path.join(gt_run.ROOT, "experiments", "default.ini"), "--vm.accel", "tcg",
               "--workload.args", IDLE_WORKLOAD, "--workload.kmix", "off", "--run.phases", "idle-host",
               "--run.repetitions", "1", "--run.warmup", "1", "--run.duration", "5", "--trace.enable", "none",
               "--output.dir", out, "--output.run-id", "idle"]
        env = dict(os.environ, SPINLAB_RUN_DIR=os.path.join(out, "run"))
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        assert p.returncode == 0, f"spinlab-run exit {p.returncode}: {p.stderr[-2000:]}"
        run_dir = os.path.join(out, "idle")
        from spinlab_report import reader
        run = reader.load_run(run_dir)
        yield {"dir": run_dir, "run": run, "hz": json.load(open(os.path.join(run_dir, "meta.json")))["host"]["tsc_hz"]}


def test_an_idle_vcpus_sleep_is_its_guests_halt(idle_run):
    """The halted side: each vCPU of an idle guest sleeps because its guest halted; at least 95 % of
    its thread's sleep lies where the guest's record (halts.csv), placed through the clock with its
    bound, surely halted."""
    run = idle_run["run"]
    assert run.halts is not None, "the run wrote no halts.csv"
    hz = idle_run["hz"]
    for vcpu in (0, 1):
        asleep, halted = _asleep_inside_halts(idle_run, "idle-host", vcpu, 0)
        n = int((run.halts["cpu"] == vcpu).sum())
        print(f"\nidle vCPU {vcpu}: asleep {asleep / hz * 1e3:.1f} ms, of it surely halted {halted / hz * 1e3:.1f} ms "
              f"({halted / asleep:.1%}); {n} halt records" if asleep else f"\nidle vCPU {vcpu}: never asleep")
        assert asleep >= MIN_HALT_TRUTH_CYCLES, f"vCPU {vcpu} of an idle guest slept only {asleep} cycles"
        assert halted >= 0.95 * asleep


# A lock that changes hands often (test-and-set, critical sections and think times of 200 cycles:
# a holder wins, lets go and wins again many times during one wait), as in the default spec. At 2
# vCPUs the runner takes a wait's holders from the guest's counts where its stamps cannot place
# them: holds began during the wait, but the waiter's own CPU took no lock of the class, so each
# was the other vCPU's (trace_results.h). vCPU 0 is frozen 30 ms every 100 ms; inside a freeze
# it holds what vCPU 1 waits for, by construction. Every wait placed by that rule behind a frozen
# holder must be holder-off, and behind a running one not.
HANDOVER_WORKLOAD = "--threads-per-cpu 1 --locks 1 --pattern same --cs-cycles 200 --think-cycles 200 --duration-ms 0"
MIN_RULE_FROZEN, MIN_RULE_RUNNING = 5, 8  # judged only on at least this many waits placed by the rule


@pytest.fixture(scope="module")
def handover_run():
    with gt_run.scratch("spinlab-gt-handover-", "hand-over run") as out:
        run_dir = gt_run.make_run(os.path.join(out, "1"), lock="tas", frozen_vcpu=FROZEN_VCPU, duration=12,
                                  timeout=240, workload=HANDOVER_WORKLOAD, export=False, pin=False)
        m = gt_run.measure(run_dir, FROZEN_VCPU, "freeze-30ms")
        m["by_rule"] = gt_run.placed_by_count_rule(run_dir, "freeze-30ms")
        yield m


def test_waits_placed_by_the_guests_counts_at_2_vcpus_name_the_frozen_holder(handover_run):
    m = handover_run
    placed = [w for w in m["waits"] if (w["cpu"], int(w["start_tsc"])) in m["by_rule"]]
    assert len(placed) == len(m["by_rule"]), "a wait the trace has is missing from the results"
    # the runner applied the rule: one holder, the other vCPU
    assert all(w["holders"] == [1 - w["cpu"]] for w in placed), [w["holders"] for w in placed][:10]
    g = gt_run.ground_truth.rates(placed, m["windows"], FROZEN_VCPU)
    print(f"\nplaced by the guest's counts: {len(placed)} of {len(m['waits'])} long waits; "
          f"{gt_run.rates_line(g, m)}")
    if g["frozen"] < MIN_RULE_FROZEN or g["running"] < MIN_RULE_RUNNING:
        pytest.skip(f"not judged: {g['frozen']} such waits behind a frozen holder and {g['running']} behind a "
                    f"running one (need {MIN_RULE_FROZEN} and {MIN_RULE_RUNNING})")
    assert g["frozen_rate"] >= 0.95, g
    assert g["running_rate"] <= 0.05, g
