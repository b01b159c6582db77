"""LHP attribution against ground truth under KVM, on the report's own final classes.

Under KVM the guest also classes each wait from steal time, which sees only the time a vCPU
thread was runnable but waiting: a frozen holder accrues none. Before, the report trusted that
class whenever it was known, and on KVM it always is: on this 2-core machine's nested KVM 14 of
104 waits behind a frozen holder were classed holder-off (the steal time said "waiter-preempted"
for 90). Now the host timeline decides each side it covers and steal time is evidence of "off"
only (analysis/spinlab_report/lhp.py). Two VMs, 2 vCPUs each pinned to its own host CPU,
lockbench as in the TCG ground truth (gt_run.py):

- ticket lock, one boot, two phases:
  - `freeze-30ms` freezing vCPU **1** (the TCG test freezes vCPU 0): the three bars of the TCG
    test, on the final classes: behind a frozen holder >= 95 % holder-off, behind a running
    holder <= 5 %, of a frozen waiter >= 95 % waiter-off;
  - `host-load` with a hog pinned to vCPU 1's host CPU: the preemption is *runnable*, the kind
    steal time sees, so both sources speak for the same waits and must agree (any time lost
    during the wait, steal time's own rule): on each side, of the waits where both decide, at
    least AGREE_MIN agree.
- queued (MCS) lock, one boot, two phases: `freeze-30ms` freezing vCPU 0, the three bars again
  (another algorithm, the other vCPU); `neighbours-1`, one neighbour VM of 1 vCPU pinned to
  vCPU 0's host CPU, whose off time the neighbour's vCPU thread took is >= 95 % classed
  `neighbour-vcpu` (gt_run.preemptor_truth).

Skipped (with the reason) where /dev/kvm makes no VM (qemu_launch.kvm_unusable_reason). Needs
`make build` and root. About 1.5 minutes on a quiet 2-core host (87 s measured) (10 s phases; a
nested KVM boot takes 3 s quiet, longer beside the other VM).
"""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import gt_run  # noqa: E402
import qemu_launch  # noqa: E402  (vm-images/, put on the path by gt_run)

from spinlab_report import ground_truth, lhp  # noqa: E402

KVM_WHY = qemu_launch.kvm_unusable_reason()   # None where /dev/kvm makes a VM
if KVM_WHY is not None:
    pytest.skip(f"no usable KVM: {KVM_WHY}", allow_module_level=True)

# Nested KVM runs guest ring 0 hundreds of times slower: the channel's requests and the boot
# take longer than under TCG.
KVM_ARGS = ["--vm.channel-timeout", "30", "--vm.boot-timeout", "300"]
# Seconds per phase: 20 s phases gave sets of 120-180 waits behind a frozen holder and 43-93 of
# a frozen waiter on this 2-core machine; 10 s keeps each set well above MIN_SET (3, 3, 20).
PHASE_SECONDS = 10
AGREE_MIN = 0.9
AGREE_SET_MIN = 20


def kvm_run(name, **kw):
    for p in (gt_run.RUN, gt_run.KERNEL):
        if not os.path.exists(p):
            pytest.fail(f"{p} missing: run `make build` first")
    out = tempfile.mkdtemp(prefix=f"spinlab-gt-kvm-{name}-")
    try:
        return out, gt_run.make_run(os.path.join(out, "1"), accel="kvm", timeout=600, duration=PHASE_SECONDS,
                                 extra=KVM_ARGS, **kw)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def judged(name, run_dir, frozen_vcpu, phase, out, remake):
    """The measurement of a freeze phase; a run too thin to judge is made once more (RETRIED)."""
    m = gt_run.measure(run_dir, frozen_vcpu, phase)
    thin = gt_run.thin_sets(m["rates"])
    if thin:
        print(f"\nRETRIED KVM ground-truth run {name}: too few waits to judge in {thin}; once more")
        m = gt_run.measure(remake(os.path.join(out, "2")), frozen_vcpu, phase)
    return m


@pytest.fixture(scope="module")
def ticket_run():
    kw = dict(lock="ticket", frozen_vcpu=1, phase="freeze-30ms, host-load", hog_vcpu=1)
    out, run_dir = kvm_run("ticket", **kw)
    try:
        remake = lambda d: gt_run.make_run(d, accel="kvm", timeout=600, duration=PHASE_SECONDS,  # noqa: E731
                                           extra=KVM_ARGS, **kw)
        yield {"freeze": judged("ticket", run_dir, 1, "freeze-30ms", out, remake),
               "hog": gt_run.measure(run_dir, 1, "host-load")}
    finally:
        keep(out)


@pytest.fixture(scope="module")
def mcs_run():
    kw = dict(lock="mcs", frozen_vcpu=0, phase="freeze-30ms, neighbours-1")
    out, run_dir = kvm_run("mcs", **kw)
    try:
        remake = lambda d: gt_run.make_run(d, accel="kvm", timeout=600, duration=PHASE_SECONDS,  # noqa: E731
                                           extra=KVM_ARGS, **kw)
        m = judged("mcs", run_dir, 0, "freeze-30ms", out, remake)
        m["neighbour"] = gt_run.measure(m["dir"], 0, "neighbours-1")
        yield m
    finally:
        keep(out)


def keep(out):
    if os.environ.get("SPINLAB_KEEP_RUN"):  # to look at a failure: keep the run, say where
        print(f"\nrun kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)


def report_line(m, what):
    sh = m["share"]
    return (f"\nKVM ground truth, {what}: {gt_run.rates_line(m['rates'], m)}; sources per side "
            f"{sh.get('sources')}, steal/timeline disagreements {sh.get('disagreements')}")


def test_ticket_lock_freezing_vcpu_1(ticket_run):
    m = ticket_run["freeze"]
    print(report_line(m, "ticket lock, vCPU 1 frozen 30 ms every 100 ms"))
    gt_run.assert_rates(m["rates"])


def test_mcs_lock_freezing_vcpu_0(mcs_run):
    print(report_line(mcs_run, "MCS lock, vCPU 0 frozen 30 ms every 100 ms"))
    gt_run.assert_rates(mcs_run["rates"])


def test_preemptors_are_the_freeze_the_hog_and_the_neighbour_vm(ticket_run, mcs_run):
    gt_run.assert_preemptor(ticket_run["freeze"], "freeze-30ms", 1, "freeze")
    gt_run.assert_preemptor(mcs_run, "freeze-30ms", 0, "freeze")
    gt_run.assert_preemptor(ticket_run["hog"], "host-load", 1, "hog")
    gt_run.assert_preemptor(mcs_run["neighbour"], "neighbours-1", gt_run.NEIGHBOUR_VCPU, "neighbour-vcpu")


def side_agreement(waits, side):
    """Steal time against the timeline on one side, by steal time's rule (any time lost during
    the wait): {(steal says off, timeline says off): waits} over the waits where both decide.
    The timeline is sure a side lost time when its least off cycles are > 0, and sure it lost
    none when its most are 0; the guest's class is about both sides at once."""
    off_classes = lhp.HOLDER_OFF if side == "holder" else lhp.WAITER_OFF
    out = {}
    for w in waits:
        rng = w.get(f"{side}_off_cycles")
        if w.get("lhp_class", "unknown") == "unknown" or rng is None:
            continue
        timeline = True if rng[0] > 0 else False if rng[1] == 0 else None
        if timeline is None:
            continue
        key = (w["lhp_class"] in off_classes, timeline)
        out[key] = out.get(key, 0) + 1
    return out


def test_runnable_preemption_both_sources_agree(ticket_run):
    m = ticket_run["hog"]
    rows = {side: side_agreement(m["waits"], side) for side in ("holder", "waiter")}
    print(f"\nKVM, ticket lock, hog on vCPU 1's host CPU: {len(m['waits'])} long waits; steal time "
          f"(off?) against the timeline (off?) per side: {rows}; disagreements by the report's rule "
          f"{m['share'].get('disagreements')}")
    for side, row in rows.items():
        n = sum(row.values())
        agree = row.get((True, True), 0) + row.get((False, False), 0)
        assert n >= AGREE_SET_MIN, f"{side}: too few waits where both sources decide: {row}"
        assert agree >= AGREE_MIN * n, f"{side}: steal time and the timeline disagree: {row}"
    # The hog made the preemption: the holder side was off in some of them by both sources.
    assert rows["holder"].get((True, True), 0) >= 1, rows


def test_kvm_counters_are_kept_around_every_window(ticket_run, mcs_run):
    """spinlab-run samples QMP query-stats before and after each repetition's window
    (kvm-stats/): every phase of both runs has both samples, each vCPU's exits moved, and the
    report's summary puts the timeline's off intervals beside them (the frozen vCPU's in
    freeze-30ms: one per effective freeze at least)."""
    from spinlab_report import kvm_stats
    for m, phases, frozen in ((ticket_run["freeze"], ("freeze-30ms", "host-load"), 1),
                              (mcs_run, ("freeze-30ms", "neighbours-1"), 0)):
        run = m["run"]
        assert sorted(run.kvm_stats) == sorted((p, 1) for p in phases), sorted(run.kvm_stats)
        s = kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases)
        print(f"\nKVM counters, lock {run.meta.get('lock')}: not kept here {s['not_kept']}; per phase "
              + "; ".join(f"{p}: " + ", ".join(f"vCPU {v['vcpu']} exits/s {v['per_s'].get('exits', 0):.0f} "
                                             f"off intervals {v['timeline_off_intervals']}" for v in d["vcpus"])
                          for p, d in s["phases"].items()))
        for p in phases:
            rows = {v["vcpu"]: v for v in s["phases"][p]["vcpus"]}
            assert sorted(rows) == [0, 1] and all(v["moved"].get("exits", 0) > 0 for v in rows.values()), rows
        freeze = {v["vcpu"]: v for v in s["phases"]["freeze-30ms"]["vcpus"]}
        assert freeze[frozen]["timeline_off_intervals"] >= len(m["windows"]) > 0


SLACK_US = gt_run.SLACK_US
FIT_APART_US = 20


def test_kvms_tsc_offset_is_the_clock_and_places_every_stamp_where_its_vcpu_ran(ticket_run, mcs_run):
    """The report maps guest times with KVM's TSC offset (debugfs, read at every repetition's
    start and end), bound 0, after the sampled fit's brackets allowed it (kvm_clock.py). The
    host's own records judge it: the start and end stamps of the long waits are TSC reads by the
    waiting vCPU, which cannot happen while its thread is frozen or descheduled, so none may lie
    inside its effective freezes or the timeline's off intervals (beyond SLACK_US); the same
    offset 1 ms off either way puts stamps there; and the sampled fit's offset, where it differs
    from KVM's, puts more there than KVM's."""
    kvm_strict, fit_strict, apart = 0, 0, []
    for m, frozen in ((ticket_run["freeze"], 1), (mcs_run, 0)):
        run, hz = m["run"], m["hz"]
        k = run.kvm_clock
        assert k is not None and k["source"] == "kvm-tsc-offset", k
        assert run.clock["bound_max_cycles"] == 0.0
        slack = SLACK_US * 1e-6 * hz
        frz, off = gt_run.stamps_report(m, frozen, run.clock)
        _, strict = gt_run.stamps_report(m, frozen, run.clock, 0)
        print(f"\nKVM clock, lock {run.meta.get('lock')}: tsc-offset {k['tsc_offset']} on {k['vcpus']} vCPUs, "
              f"{k['samples_read']} reads; the fit allows it with {k['margin_cycles'] / hz * 1e6:.1f} us to spare "
              f"(fit offset {k['fit_offset_cycles']}, late by >= {k['fit_late_cycles'] / hz * 1e6:.1f} us); stamps: "
              f"{frz['inside']} of {frz['stamps']} inside vCPU {frozen}'s freezes, {off['inside']} of {off['stamps']} "
              f"inside their vCPU's off intervals beyond {SLACK_US} us ({strict['inside']} beyond 0, the deepest "
              f"by {off['worst_cycles'] / hz * 1e6:.1f} us)")
        gt_run.assert_stamps_placed(frz, off)
        for sign in (1, -1):
            shifted = dict(run.clock, offset_cycles=run.clock["offset_cycles"] + sign * hz // 1000)
            caught = ground_truth.stamps_off_cpu(m["waits"], m["off"], shifted, slack)
            assert caught["inside"] > caught["stamps"] // 100, (sign, caught)
        kvm_strict += strict["inside"]
        # Which offset is right, where the two differ (issue 38): the sampled fit's, taken as
        # exact, puts stamps where their vCPU could not run (here it lies ~50 us later: 6 and 8
        # stamps inside off intervals, up to 10.7 and 27.2 us deep, where KVM's put 0 of 3,644
        # and 2,798; shifting KVM's offset, stamps stay out of the off intervals only from about
        # -10 to 0 us). Where the fit agrees with KVM within FIT_APART_US (a host whose guest
        # kernel runs natively), there is nothing to tell apart.
        apart_us = (k["fit_offset_cycles"] - run.clock["offset_cycles"]) / hz * 1e6
        if abs(apart_us) >= FIT_APART_US:
            fit = dict(run.clock, offset_cycles=k["fit_offset_cycles"])
            fit_strict += ground_truth.stamps_off_cpu(m["waits"], m["off"], fit, 0)["inside"]
            apart.append(f"{apart_us:.1f} us")
    if apart:
        print(f"\nthe sampled fit's offset ({', '.join(apart)} from KVM's) taken as exact: {fit_strict} stamps inside "
              f"their vCPU's off intervals; KVM's: {kvm_strict}")
        assert fit_strict > kvm_strict, (fit_strict, kvm_strict)
