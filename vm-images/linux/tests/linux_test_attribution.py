"""attribution and timeline_input: long waits classed on hand-built host timelines (exact)."""
import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from spinlab_linux import attribution as at
from spinlab_linux import clockfit, records
from spinlab_linux.timeline_input import (END_OF_TIME, HostTimeline, IntervalSet, parse_freeze_record,
                                          parse_timeline_csv, read_timeline_csv, timeline_phase_windows)

REPO = Path(__file__).resolve().parents[3]
LOCK = 0xffff888000123400
OTHER_LOCK = 0xffff888000999900
S = 10_000_000          # the wait's start (guest TSC; the clock below maps guest = host)
L = 1 << 22             # its length: long (>= 2^20)
E = 1_000               # the clock's bound
WINDOW = (0, 100_000_000)


def clock(bound=E, span=(100_000, 200_000_000)):
    """guest TSC = host TSC, each point's bracket [-bound, +bound]: the bound is `bound`."""
    return clockfit.fit([(g - bound, g + bound, g) for g in span])


def timeline(off=None, ncpus=2, covered=None):
    """Every vCPU covered over WINDOW (unless `covered` says otherwise), off where `off` says."""
    cov = {v: [WINDOW] for v in range(ncpus)} if covered is None else covered
    return HostTimeline(off or {}, cov)


def wait(cpu=0, start=S, length=L, depth=0, lock=LOCK):
    return records.Wait(cpu=cpu, depth=depth, lock=lock, start=start, end=start + length)


def one(waits, ncpus=2, tl=None, cmap=None, **kw):
    res = at.attribute(waits, ncpus, cmap or clock(), tl or timeline(ncpus=ncpus), **kw)
    return res


# -- 2 vCPUs: the holder is the other vCPU

def test_two_vcpus_holder_fully_off_is_holder_preempted():
    w = one([wait()], tl=timeline({1: [(S - 5 * E, S + L + 5 * E)]})).waits[0]
    assert w.cls == at.HOLDER_PREEMPTED and w.source == at.SOURCE_OTHER_VCPU
    assert w.source == "holder = the other vCPU (exact at 2 vCPUs)"
    assert w.holder == 1 and w.off_share == (1.0, 1.0)
    assert w.waiter_off_share == (0.0, 0.0) and w.waiter_side == "on"
    assert (w.host_start, w.host_end, w.bound_start, w.bound_end) == (S, S + L, E, E)
    d = json.loads(json.dumps(w.as_dict()))
    assert d["class"] == "holder-preempted" and d["others"] == {"1": [1.0, 1.0]} and d["depth"] == 0


def test_two_vcpus_holder_on_is_holder_ran():
    w = one([wait()]).waits[0]
    assert w.cls == at.HOLDER_RAN and w.off_share == (0.0, 0.0)


def test_two_vcpus_half_off_within_the_bound_is_uncertain():
    # off exactly for the first half: the share is 1/2 at the mapped ends, and within +-E it can
    # fall on either side: least (L/2 - E) / L (both ends E later), most (L/2 + E) / L.
    w = one([wait()], tl=timeline({1: [(0, S + L // 2)]})).waits[0]
    assert w.cls == at.UNCERTAIN
    assert w.off_share == (float(Fraction(L // 2 - E, L)), float(Fraction(L // 2 + E, L)))
    # half an E less off: still uncertain with the bound; decided with an exact clock
    tl = timeline({1: [(0, S + L // 2 - E // 2)]})
    assert one([wait()], tl=tl).waits[0].cls == at.UNCERTAIN
    assert one([wait()], tl=tl, cmap=clock(bound=0)).waits[0].cls == at.HOLDER_RAN
    # beyond the bound on either side: decided
    assert one([wait()], tl=timeline({1: [(0, S + L // 2 + 2 * E)]})).waits[0].cls == at.HOLDER_PREEMPTED
    assert one([wait()], tl=timeline({1: [(0, S + L // 2 - 2 * E)]})).waits[0].cls == at.HOLDER_RAN


def test_two_vcpus_uncovered_holder_is_unknown():
    tl = timeline(covered={0: [WINDOW]})  # vCPU 1 not in the timeline at all
    w = one([wait()], tl=tl).waits[0]
    assert w.cls == at.UNKNOWN and w.off_share == (0.0, 1.0)
    assert "does not cover vCPU 1" in w.why
    # 'unknown' timeline rows over most of the wait: the same
    tl = parse_timeline_csv(csv_text([
        (0, 11, "on", 0, 100_000_000),
        (1, 12, "on", 0, S + L // 4), (1, 12, "unknown", S + L // 4, S + L), (1, 12, "on", S + L, 100_000_000)]))
    assert one([wait()], tl=tl).waits[0].cls == at.UNKNOWN
    # partly covered, but what is covered decides it: off for 3/4 of the wait, the rest not covered
    tl = HostTimeline({1: [(0, S + 3 * L // 4)]}, {0: [WINDOW], 1: [(0, S + 3 * L // 4)]})
    assert one([wait()], tl=tl).waits[0].cls == at.HOLDER_PREEMPTED


def test_two_vcpus_waiter_preemption_is_reported_not_blamed():
    w = one([wait()], tl=timeline({0: [(0, 50_000_000)]})).waits[0]
    assert w.cls == at.HOLDER_RAN
    assert w.waiter_side == "off" and w.waiter_off_share == (1.0, 1.0)
    assert one([wait()], tl=timeline({0: [(0, 50_000_000)]})).summary()["waiter_off"] == 1


def test_only_long_waits_are_classed():
    assert at.LONG_WAIT_THRESHOLD == records.LONG_WAIT_THRESHOLD == 1 << 20
    res = one([wait(length=(1 << 20) - 1), wait(start=S + 2 * L, length=1 << 20)])
    assert [w.index for w in res.waits] == [1]
    assert [w.index for w in one([wait(length=5000)], threshold=4096).waits] == [0]


def test_outside_the_clock_is_unknown_and_said():
    w = one([wait(start=250_000_000)]).waits[0]
    assert w.cls == at.UNKNOWN and w.source == "none" and w.host_start is None
    assert "outside the clock points' span" in w.why
    assert one([wait(start=250_000_000)]).summary()["unmapped"] == 1


# -- 4 vCPUs

def test_four_vcpus_every_other_ran_is_holder_ran():
    w = one([wait(cpu=2)], ncpus=4, tl=timeline({2: [(0, WINDOW[1])]}, ncpus=4)).waits[0]
    assert w.cls == at.HOLDER_RAN and w.source == "every other vCPU ran (exact)"
    assert w.holder is None and set(w.others) == {0, 1, 3}
    assert w.waiter_side == "off"  # its own vCPU's off time is not a holder's


def test_four_vcpus_an_off_waiter_looks_like_a_preempted_holder():
    # vCPU 1 held the lock and ran; vCPU 3, another waiter, was frozen: the class is the bound.
    w = one([wait(cpu=0)], ncpus=4, tl=timeline({3: [(0, WINDOW[1])]}, ncpus=4)).waits[0]
    assert w.cls == at.POSSIBLY_PREEMPTED and w.source.startswith("possibly preempted (a bound")
    assert w.most_off_vcpu == 3 and w.others[3] == (1.0, 1.0) and w.others[1] == (0.0, 0.0)


def test_four_vcpus_off_time_spread_over_others_is_not_holder_ran():
    # vCPUs 1, 2, 3 each off for a third of the wait, one after another: each alone ran for two
    # thirds, but the lock may have passed through them as each was off. The union decides.
    third = L // 3
    off = {v: [(S + (v - 1) * third, S + v * third + (L if v == 3 else 0))] for v in (1, 2, 3)}
    w = one([wait()], ncpus=4, tl=timeline(off, ncpus=4)).waits[0]
    assert all(hi < 0.5 for lo, hi in w.others.values())
    assert w.cls == at.POSSIBLY_PREEMPTED and w.off_share[0] > 0.99


def test_four_vcpus_one_uncovered_other_is_unknown():
    cov = {0: [WINDOW], 1: [WINDOW], 2: [WINDOW]}  # vCPU 3 not covered
    w = one([wait()], ncpus=4, tl=timeline(covered=cov, ncpus=4)).waits[0]
    assert w.cls == at.UNKNOWN
    cov3 = {0: [WINDOW], 1: [WINDOW], 2: [WINDOW], 3: [(0, S + L // 2)]}
    assert one([wait()], ncpus=4, tl=timeline(covered=cov3, ncpus=4)).waits[0].cls == at.UNKNOWN
    off = {1: [(0, S + L // 2)]}  # half off within the clock's bound, all covered
    assert one([wait()], ncpus=4, tl=timeline(off, ncpus=4)).waits[0].cls == at.UNCERTAIN


def test_nested_waits_are_each_classed_and_flagged():
    outer = wait(cpu=0, start=S, length=4 * L)
    inner = wait(cpu=0, start=S + L, length=2 * L, depth=1, lock=OTHER_LOCK)
    short = wait(cpu=0, start=S + 3 * L + 10, length=100, depth=1)
    other_cpu = wait(cpu=1, start=S + L, length=L)
    tl = timeline({1: [(S + L, S + 3 * L - 10 * E)], 2: [(0, 1)]}, ncpus=4)
    res = one([outer, inner, short, other_cpu], ncpus=4, tl=tl)
    by = {w.index: w for w in res.waits}
    assert set(by) == {0, 1, 3}
    assert by[0].depth == 0 and by[0].outer is None and by[0].nested_cycles == 2 * L + 100
    assert by[1].depth == 1 and by[1].outer == 0 and by[1].nested_cycles == 0
    assert by[1].cls == at.POSSIBLY_PREEMPTED        # vCPU 1 off for nearly all of the inner wait
    assert by[0].cls == at.HOLDER_RAN                # and for less than half of the outer one
    assert res.summary()["nested"] == 1 and res.nested_total == 2


@pytest.mark.parametrize("waits, message", [
    ([wait(start=S, length=L), wait(start=S + L // 2, length=L, depth=1)],
     "waits 0 and 1 on cpu 0 overlap without one lying inside the other"),
    ([wait(start=S, length=L), wait(start=S + 10, length=100, depth=0)],
     r"wait 1 \(depth 0\) lies inside wait 0 \(depth 0\) on cpu 0 but is not deeper"),
])
def test_waits_that_do_not_nest_are_refused(waits, message):
    with pytest.raises(ValueError, match=message):
        one(waits)


# -- the summary

def test_summary_counts_and_phases():
    tl = timeline({1: [(0, 30_000_000)]})
    waits = [wait(start=S), wait(start=40_000_000), wait(start=60_000_000), wait(start=S + L // 2, cpu=1)]
    res = one(waits, tl=tl)
    s = res.summary({"host-load": (0, 30_000_000), "idle-host": (30_000_000, 100_000_000)})
    assert s["classes"] == {"holder-preempted": 1, "possibly-preempted": 0, "holder-ran": 3,
                            "uncertain": 0, "unknown": 0}
    assert s["lhp_share"]["class"] == "holder-preempted" and s["lhp_share"]["kind"] == "exact"
    assert s["lhp_share"]["share"] == 0.25 and s["lhp_share"]["share_max"] == 0.25
    assert s["phases"]["host-load"]["lhp_share"]["share"] == 0.5
    assert s["phases"]["host-load"]["long_waits"] == 2
    assert s["phases"]["idle-host"]["lhp_share"]["share"] == 0.0
    s4 = one([wait()], ncpus=4, tl=timeline({3: [WINDOW]}, ncpus=4)).summary()
    assert s4["lhp_share"]["class"] == "possibly-preempted" and s4["lhp_share"]["kind"] == "upper bound"
    with pytest.raises(ValueError, match="phase 'x': window"):
        res.summary({"x": (5, 1)})


# -- the ground truth

def test_ground_truth_two_vcpus_frozen_holder():
    # vCPU 1 holds the module's lock in turns; the host freezes vCPU 1 during two of its holds.
    frozen = {1: [(S - 100_000, S + L + 100_000), (30_000_000, 30_000_000 + L + 200_000)]}
    holds = [(1, S - 50_000, S + L - 20), (1, 30_000_000 + 50, 30_000_000 + L + 100_000),
             (1, 50_000_000, 50_000_000 + L)]
    waits = [wait(start=S), wait(start=30_000_000 + 100), wait(start=50_000_000 + 10),
             wait(start=70_000_000, lock=OTHER_LOCK), wait(start=80_000_000)]
    tl = timeline().with_freezes(frozen)
    res = one(waits, tl=tl)
    gt = at.ground_truth_check(res, holds, frozen, lock=LOCK)
    assert gt["waits_on_lock"] == 4 and gt["no_known_holder"] == 1       # the last: no hold by then
    assert gt["frozen_holder_waits"] == 2
    assert gt["counts"]["holder-preempted"] == 2 and gt["fractions"]["holder-preempted"] == 1.0
    assert gt["meets_bar"] and gt["counts"]["holder-ran"] == 0
    # a classifier that had not seen the freezes would have said holder-ran: the check fails
    blind = at.ground_truth_check(one(waits), holds, frozen, lock=LOCK)
    assert blind["counts"]["holder-ran"] == 2 and not blind["meets_bar"]


def test_ground_truth_four_vcpus_counts_how_loose_the_bound_is():
    # Wait A: holder vCPU 1 frozen -> possibly-preempted, and it was. Wait B: holder vCPU 1 ran,
    # but vCPU 3 (another waiter) was frozen -> possibly-preempted, though the holder ran.
    a, b = S, 40_000_000
    frozen = {1: [(a - 1_000, a + L + 1_000)], 3: [(b - 1_000, b + L + 1_000)]}
    holds = [(1, a - 500, a + L - 10), (1, b - 500, b + L - 10)]
    res = one([wait(start=a), wait(start=b)], ncpus=4, tl=timeline(ncpus=4).with_freezes(frozen))
    assert [w.cls for w in res.waits] == [at.POSSIBLY_PREEMPTED] * 2
    gt = at.ground_truth_check(res, holds, frozen, lock=LOCK)
    assert gt["frozen_holder_waits"] == 1 and gt["fractions"]["possibly-preempted"] == 1.0
    assert gt["possibly_preempted"] == 2 and gt["possibly_preempted_holder_ran"] == 1
    assert gt["meets_bar"] and "or possibly-preempted" in gt["bar"]
    assert [d["holder"] for d in gt["details"]] == [1, 1]


def test_ground_truth_holder_is_the_last_hold_begun_by_the_wait_end():
    # vCPU 2 held first (frozen), then vCPU 1 briefly before the waiter got the lock: the
    # holder at the end is vCPU 1, whose share is 0; the waiter's own hold is never its holder.
    frozen = {2: [(S, S + L)]}
    holds = [(2, S - 10, S + L - 5_000), (1, S + L - 4_000, S + L - 100), (0, S + L, S + L + 10)]
    res = one([wait()], ncpus=4, tl=timeline(ncpus=4).with_freezes(frozen))
    gt = at.ground_truth_check(res, holds, frozen, lock=LOCK)
    assert gt["details"][0]["holder"] == 1 and gt["details"][0]["frozen_share"] == 0.0
    assert gt["frozen_holder_waits"] == 0 and not gt["meets_bar"]


@pytest.mark.parametrize("holds, frozen, message", [
    ([(1, 10, 5)], {}, "hold 0: release_tsc 5 is before acquire_tsc 10"),
    ([(2, 10, 50)], {}, r"hold 0: cpu 2, but the guest has 2 vCPUs \(0-1\)"),
    ([(1, 10)], {}, r"hold 0 is \(1, 10\), not \(cpu, acquire_tsc, release_tsc\)"),
    ([], {5: [(0, 1)]}, "frozen windows for vCPU 5, but the guest has 2 vCPUs"),
    ([], {1: [(9, 3)]}, "vCPU 1's freeze window 0 ends at 3, before its start 9"),
])
def test_ground_truth_bad_input(holds, frozen, message):
    with pytest.raises(ValueError, match=message):
        at.ground_truth_check(one([wait()]), holds, frozen, lock=LOCK)


# -- bad input

@pytest.mark.parametrize("waits, ncpus, message", [
    ([wait(cpu=2)], 2, r"wait 0: cpu 2, but the guest has 2 vCPUs \(0-1\)"),
    ([wait(), records.Wait(0, 0, LOCK, 500, 400)], 2, "wait 1: end_tsc 400 is before start_tsc 500"),
    ([(0, 0, LOCK, -1, 5)], 2, "wait 0's start_tsc is -1, below 0"),
    ([(0, 0, LOCK, 1)], 2, "wait 0 is .*neither a records.Wait nor"),
    ([wait()], 1, "ncpus is 1: .* at least 2 vCPUs"),
])
def test_bad_waits_are_named(waits, ncpus, message):
    with pytest.raises(ValueError, match=message):
        at.attribute(waits, ncpus, clock(), timeline(ncpus=max(ncpus, 1)))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="the timeline has vCPU 2, but the guest has 2 vCPUs"):
        at.attribute([wait()], 2, clock(), timeline(ncpus=4))
    with pytest.raises(ValueError, match="not a clockfit.ClockMap"):
        at.attribute([wait()], 2, {"offset": 0}, timeline())
    with pytest.raises(ValueError, match="threshold is 0, below 1"):
        at.attribute([wait()], 2, clock(), timeline(), threshold=0)


# -- the share's extremes are exact

def brute_min_share(s, a0, a1, b0, b1):
    return min(Fraction(s.measure(a, b), b - a) for a in range(a0, a1 + 1) for b in range(b0, b1 + 1))


def test_min_share_equals_brute_force():
    rng = random.Random(51)
    for _ in range(300):
        pts = sorted(rng.sample(range(0, 80), rng.randrange(0, 12)))
        s = IntervalSet(list(zip(pts[::2], pts[1::2])))
        a0 = rng.randrange(0, 30)
        a1 = a0 + rng.randrange(0, 10)
        b0 = a1 + rng.randrange(1, 30)
        b1 = b0 + rng.randrange(0, 10)
        assert at._min_share(s, a0, a1, b0, b1) == brute_min_share(s, a0, a1, b0, b1), (list(s), a0, a1, b0, b1)


# -- timeline_input: the real formats

HEADER = ("vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,start_ns,end_ns,reason,cpu,"
          "preemptor,preemptor_vm,preemptor_vcpu,preemptor_pid,preemptor_comm")


def csv_text(rows, phase="host-load", rep=1):
    lines = [HEADER]
    for v, tid, state, s, e in rows:
        pre = "" if state == "on" else "host-task"
        lines.append(f"{v},{tid},{state},{s},{e},{phase},{rep},,,R+,{-1 if state != 'on' else 0},{pre},,,77,"
                     f"\"kworker/0:1,odd\"")
    return "\n".join(lines) + "\n"


def test_timeline_csv_states():
    text = csv_text([(0, 11, "on", 0, 100), (0, 11, "off", 100, 150), (0, 11, "frozen", 150, 200),
                     (0, 11, "unknown", 200, 260), (0, 11, "on", 260, 300), (1, 12, "on", 0, 300)])
    tl = parse_timeline_csv(text)
    assert list(tl.off_set(0)) == [(100, 200)]
    assert list(tl.on_set(0)) == [(0, 100), (260, 300)]   # 200-260 'unknown': not covered
    assert list(tl.on_set(1)) == [(0, 300)] and list(tl.off_set(1)) == []
    assert parse_timeline_csv(text, phase="idle-host").vcpus == []
    assert parse_timeline_csv(text, rep=1).vcpus == [0, 1]
    assert timeline_phase_windows(text) == {("host-load", 1): (0, 300)}


def test_timeline_csv_the_results_contracts_file():
    tl = read_timeline_csv(REPO / "analysis/tests/data/run-basic/timeline.csv")
    assert tl.vcpus == [0, 1]
    assert (3_505_000_000, 3_515_000_000) in list(tl.off_set(0))


@pytest.mark.parametrize("rows, message", [
    ([(0, 11, "on", 0, 100), (0, 11, "off", 50, 150)], r"vCPU 0 is both on and off in \[50, 100\) \(lines 2, 3\)"),
    ([(0, 11, "running", 0, 100)], "line 2: state 'running' is none of on, off, frozen, unknown"),
    ([(0, 11, "on", 100, 50)], "line 2: end_host_tsc 50 is before start_host_tsc 100"),
    ([(-1, 11, "on", 0, 50)], "line 2: vcpu -1 .* no vcpu_threads entry for tid 11"),
])
def test_timeline_csv_bad_rows(rows, message):
    with pytest.raises(ValueError, match=message):
        parse_timeline_csv(csv_text(rows))


def test_timeline_csv_missing_column_and_placing_by_tid():
    with pytest.raises(ValueError, match="the header has no column state"):
        parse_timeline_csv("vcpu,tid,start_host_tsc,end_host_tsc\n0,1,2,3\n")
    tl = parse_timeline_csv(csv_text([(-1, 11, "off", 0, 50)]), vcpu_threads={"1": 11})
    assert list(tl.off_set(1)) == [(0, 50)]
    with pytest.raises(ValueError, match="vcpu 0, but vcpu_threads gives tid 11 vCPU 1"):
        parse_timeline_csv(csv_text([(0, 11, "off", 0, 50)]), vcpu_threads={"1": 11})


FREEZE_HEADER = ("seq,tid,vcpu,planned_begin_tsc,planned_end_tsc,begin_tsc,marked_tsc,frozen_tsc,end_tsc,"
                  "thawed_tsc,stopped_tsc,resumed_tsc,effective,planned_begin_ns,planned_end_ns,begin_ns,"
                  "marked_ns,frozen_ns,end_ns,thawed_ns,stopped_ns,resumed_ns")


def freeze_row(seq, tid, vcpu, stopped, resumed, status):
    return f"{seq},{tid},{vcpu},1,2,3,4,5,6,7,{stopped},{resumed},{status},1,2,3,4,5,6,7,8,9"


def test_freeze_record_effective_windows():
    text = "\n".join([FREEZE_HEADER, freeze_row(0, 12, 1, 1000, 2000, "ok"),
                      freeze_row(1, 12, 1, 0, 0, "never-stopped"), freeze_row(2, 13, 2, 0, 0, "no-events"),
                      freeze_row(3, 12, 1, 5000, 0, "not-resumed")]) + "\n"
    assert parse_freeze_record(text) == {1: [(1000, 2000), (5000, END_OF_TIME)]}
    bad = FREEZE_HEADER + "\n" + freeze_row(0, 12, 1, 1000, 2000, "thawed") + "\n"
    with pytest.raises(ValueError, match="freeze record, line 2: unknown effective status 'thawed'"):
        parse_freeze_record(bad)
    bad = FREEZE_HEADER + "\n" + freeze_row(0, 12, 1, 3000, 2000, "ok") + "\n"
    with pytest.raises(ValueError, match="line 2: resumed_tsc 2000 is before stopped_tsc 3000"):
        parse_freeze_record(bad)


def test_freezes_win_over_on_rows():
    # inside an effective window the thread may be on CPU only on the kernel's freezer path
    tl = parse_timeline_csv(csv_text([(1, 12, "on", 0, 1000)])).with_freezes({1: [(200, 400), (900, None)]})
    assert list(tl.off_set(1)) == [(200, 400), (900, END_OF_TIME)]
    assert list(tl.on_set(1)) == [(0, 200), (400, 900)]


def test_interval_set_operations():
    a = IntervalSet([(10, 20), (0, 5), (5, 8), (30, 40), (15, 25), (50, 50)])
    assert list(a) == [(0, 8), (10, 25), (30, 40)]
    assert a.measure(4, 35) == 4 + 15 + 5 and a.cumulative(100) == 33
    assert a.breakpoints(8, 35) == [10, 25, 30]
    b = IntervalSet([(6, 12), (35, 60)])
    assert list(a.subtract(b)) == [(0, 6), (12, 25), (30, 35)]
    assert list(a.intersect(b)) == [(6, 8), (10, 12), (35, 40)]
    assert list(a.union(b)) == [(0, 25), (30, 60)]
    for x, y in itertools.product(range(0, 45, 3), repeat=2):
        assert a.measure(x, y) == sum(1 for t in range(x, y) if any(s <= t < e for s, e in a))


def test_host_timeline_bad_input():
    with pytest.raises(ValueError, match="vCPU index -1 is not a non-negative integer"):
        HostTimeline({-1: [(0, 5)]}, {})
    with pytest.raises(ValueError, match="vCPU 0's covered span 0 ends at 1, before its start 9"):
        HostTimeline({}, {0: [(9, 1)]})
