"""The LHP measurement on a synthetic timeline whose answers are known by construction: the
package's (lhp.classify, one wait at a time here), and the per-wait reference's interval sums
(lhp_reference.py, which test_rules_reference.py holds the package to)."""
from types import SimpleNamespace

import pandas as pd
import pytest

from lhp_reference import fraction_table, off_cycles, off_during
from spinlab_report import lhp
from spinlab_report.attribution import long_waits_share
from spinlab_report.lhp import ClockMap, chain_pieces, gap_off_range, guest_to_host, off_index
from spinlab_report.reader import Snapshot
from spinlab_report.waits import LongWaits

# host = guest + 1000, to within +-10 cycles, over guest [0, 10M]
CLOCK = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10.0,
         "points": [[0, 1000, 10.0], [10_000_000, 1000, 10.0]]}
# host TSC; vCPU 0 off [100k, 200k) and frozen [500k, 510k); vCPU 1 off [300k, 400k); both covered 0..1M
ROWS = [(0, "on", 0, 100_000), (0, "off", 100_000, 200_000), (0, "on", 200_000, 500_000),
        (0, "frozen", 500_000, 510_000), (0, "on", 510_000, 1_000_000),
        (1, "on", 0, 300_000), (1, "off", 300_000, 400_000), (1, "on", 400_000, 1_000_000)]
TL = pd.DataFrame([(v, 10 + v, s, a, b, "host-load", 1) for v, s, a, b in ROWS],
                  columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])


def measure(w: dict, index, cmap) -> dict:
    """The package's measurement and attribution of one wait (its row of long_waits_share)."""
    return lhp.classify(SimpleNamespace(long_waits=[w], rep=1), index, cmap, 0).row(0)


def classify(w: dict, index, clock) -> tuple:
    """(class, the holder side's source) of one wait, as the package attributes it."""
    cmap = ClockMap(clock) if index is not None and clock is not None else None
    r = lhp.classify(SimpleNamespace(long_waits=[w], rep=1), index if cmap else None, cmap, 0).row(0)
    return r["cause"], r["holder_source"]


def wait(cpu, holder, start_guest, cycles, cls="unknown", holder_end=None):
    return {"cpu": cpu, "lock_class": "x", "start_tsc": start_guest, "wait_cycles": cycles, "holder_cpu": holder,
            "holder_end_cpu": holder_end, "lhp_class": cls}


def test_off_cycles_and_edges():
    idx = off_index(TL)
    assert off_cycles(idx, 0, 150_000, 160_000) == 10_000       # inside an off interval
    assert off_cycles(idx, 0, 90_000, 100_001) == 1             # overlaps its first cycle
    assert off_cycles(idx, 0, 200_000, 300_000) == 0            # starts exactly when it ends
    assert off_cycles(idx, 0, 0, 1_000_000) == 110_000          # off and frozen added
    assert off_during(idx, 0, 505_000, 505_001) is True         # frozen counts as off
    assert off_during(idx, 0, 50_000, 100_000) is False
    assert off_cycles(idx, 1, 990_000, 1_100_000) is None       # runs past the recorded span
    assert off_cycles(idx, 7, 0, 10) is None and off_cycles(idx, None, 0, 10) is None


def test_overlapping_off_and_frozen_rows_count_once():
    rows = [(0, "on", 0, 100), (0, "off", 100, 300), (0, "frozen", 150, 250), (0, "frozen", 280, 400),
            (0, "on", 400, 1000)]
    tl = pd.DataFrame([(v, 10, s, a, b, "p", 1) for v, s, a, b in rows],
                      columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])
    assert off_cycles(off_index(tl), 0, 0, 1000) == 300


def test_clock_map_points_and_bounds():
    m = ClockMap({"offset_cycles": 0, "drift_ppm": 0.0, "ref_guest_tsc": 0,
                  "points": [[1000, 500, 5.0], [2000, 500, 7.0], [3000, 300, 4.0]]})
    assert m.map(1500) == (2000.0, 7.0)                 # flat segment: the wider half bracket
    # a step of 200 somewhere in (2000, 3000): the offset lay in [300 - 4, 500 + 7] all along,
    # so the middle of that and half its span, wherever the step came
    host, bound = m.map(2500)
    assert host == pytest.approx(2901.5) and bound == pytest.approx(105.5)
    assert m.map(2001)[0] == pytest.approx(2402.5) and m.map(2999)[0] == pytest.approx(3400.5)
    assert m.map(999)[1] == float("inf") and m.map(3001)[1] == float("inf")
    # a straight line without points states no bound unless clock.json gives one
    assert ClockMap({"offset_cycles": 5, "drift_ppm": 0.0, "ref_guest_tsc": 0}).map(10) == (15.0, float("inf"))
    assert guest_to_host(5000, CLOCK) == 6000
    drift = {"offset_cycles": 0, "drift_ppm": 100.0, "ref_guest_tsc": 1_000_000}
    assert guest_to_host(2_000_000, drift) == pytest.approx(2_000_100)


def test_half_of_the_wait_is_the_threshold():
    idx = off_index(TL, "host-load", 1)
    # host [99_000, 109_000): holder 0 off 9_000 of 10_000 -> holder-preempted; waiter 1 on
    assert classify(wait(1, 0, 98_000, 10_000), idx, CLOCK) == ("holder-preempted", "timeline")
    # host [90_500, 100_500): holder off only 500 of 10_000 -> neither (any overlap is not LHP)
    assert classify(wait(1, 0, 89_500, 10_000), idx, CLOCK) == ("neither", "timeline")
    # host [141_000, 341_000): holder 1 off 41_000 of 200_000, waiter 0 off 59_000 -> neither
    assert classify(wait(0, 1, 140_000, 200_000), idx, CLOCK) == ("neither", "timeline")
    # host [151_000, 152_000): waiter 0 off throughout
    assert classify(wait(0, 1, 150_000, 1000), idx, CLOCK) == ("waiter-preempted", "timeline")
    # host [299_000, 401_000) for 1, wait from 0 whose vCPU ran: holder 1 off 100/102 -> holder
    assert classify(wait(0, 1, 298_000, 102_000), idx, CLOCK) == ("holder-preempted", "timeline")
    assert classify(wait(0, None, 150_000, 1000), idx, CLOCK) == ("unknown", "none")
    assert classify(wait(0, 1, 150_000, 1000), None, None) == ("unknown", "none")
    # where the timeline covers a side it decides it: steal time said 'both', the timeline has
    # holder 0 off 9_000 of 10_000 and waiter 1 running
    assert classify(wait(1, 0, 98_000, 10_000, "both"), idx, CLOCK) == ("holder-preempted", "timeline")


def test_a_wait_whose_class_depends_on_the_clock_bound_is_uncertain():
    idx = off_index(TL, "host-load", 1)
    # host [100_000 - 5_000, +10_000): holder 0 off exactly 5_000 = half; +-10 cycles decide it
    w = wait(1, 0, 94_000, 10_000)
    r = measure(w, idx, ClockMap(CLOCK))
    assert r["timeline_class"] == "uncertain" and r["timeline_holder"] == "uncertain"
    assert r["holder_off_cycles"] == [4990.0, 5010.0]
    # with a tighter clock (+-0) the same wait is exactly half: holder off
    exact = dict(CLOCK, points=[[0, 1000, 0.0], [10_000_000, 1000, 0.0]])
    assert measure(w, idx, ClockMap(exact))["timeline_class"] == "holder-preempted"
    # 100 cycles away from the threshold, +-10 cycles do not matter
    assert measure(wait(1, 0, 94_100, 10_000), idx, ClockMap(CLOCK))["timeline_class"] == "holder-preempted"
    assert measure(wait(1, 0, 93_900, 10_000), idx, ClockMap(CLOCK))["timeline_class"] == "neither"
    # outside the clock's sampled span the wait cannot be placed
    assert measure(wait(1, 0, 20_000_000, 10_000), idx, ClockMap(CLOCK))["timeline_class"] == "unknown"


def test_holder_change_is_attributed_in_order():
    # vCPU 2 waits while it runs throughout; the holder is vCPU 0 and then, from an unknown
    # moment, vCPU 1. Host [151k, 351k): vCPU 0 off [151k, 200k) = 49k, vCPU 1 off [300k, 351k) = 51k.
    tl = pd.concat([TL, pd.DataFrame([(2, 12, "on", 0, 1_000_000, "host-load", 1)], columns=TL.columns)])
    idx = off_index(tl, "host-load", 1)
    # switch at 351k: all on 0 -> 49k (the least); anywhere in [200k, 300k]: 49k + 51k (the most)
    assert gap_off_range(idx, [(0, 1, 151_000, 351_000)], 0, 200_000) == (49_000, 100_000)
    assert gap_off_range(idx, [(0, 0, 151_000, 351_000)], 0, 200_000) == (49_000, 49_000)
    m = measure(wait(2, 0, 150_000, 200_000, holder_end=1), idx, ClockMap(CLOCK))
    assert m["holders"] == [0, 1]
    assert m["timeline_class"] == "uncertain"  # 24.5% to 50% of the wait: the switch moment decides
    # the first holder alone would have been a clear 'neither'
    assert measure(wait(2, 0, 150_000, 200_000), idx, ClockMap(CLOCK))["timeline_class"] == "neither"
    same = measure(wait(1, 0, 98_000, 10_000, holder_end=0), idx, ClockMap(CLOCK))
    assert same["holders"] == [0] and same["timeline_class"] == "holder-preempted"


def test_share_counts_threshold_uncertain_and_unknowns():
    waits = [wait(1, 0, 98_000, 2 ** 20),             # host [99k, 1.15M) runs past the span -> unknown
             wait(1, 0, 98_000, 10_000),              # below the threshold: ignored
             wait(1, 0, 10, 2 ** 20, "neither"),      # past the span too; steal time is no evidence of 'on'
             wait(1, 0, 10, 2 ** 20, "holder-preempted"),  # past the span: steal time says off
             wait(1, 0, 10_000, 2 ** 20)]             # host [11k, 1.06M) past the span, 0 covered until 1M
    snap = Snapshot("host-load", 1, 1.0, 0, 10 ** 6, {}, [], waits, 2 ** 19, 0, "s")
    r = long_waits_share([snap], TL, CLOCK, 2 ** 20)
    assert (r["long_waits"], r["holder_off"], r["holder_on"], r["unknown"], r["uncertain"]) == (4, 1, 0, 3, 0)
    assert (r["from_guest"], r["from_timeline"]) == (1, 0)
    assert r["share"] == 1.0
    # the timeline covers the waiter's vCPU but not the holder's (vCPU 1's rows end at 400k):
    # the waiter's side is measured, the holder's is unknown, and so is the wait's class
    tl = TL[~((TL["vcpu"] == 1) & (TL["start_host_tsc"] >= 400_000))]
    r = long_waits_share([Snapshot("host-load", 1, 1.0, 0, 1, {}, [], [wait(0, 1, 300_000, 2 ** 19)], 1, 0, "s")],
                         tl, CLOCK, 1)
    (one,) = r["waits"]
    assert (one["holder_side"], one["holder_source"], one["waiter_source"], one["cause"]) == \
        ("unknown", "none", "timeline", "unknown")
    assert r["sources"]["waiter"] == {"timeline": 1, "steal": 0, "none": 0}
    assert r["thresholds"] == {"holder_off_min_fraction": 0.5, "waiter_off_min_fraction": 0.5}
    none = long_waits_share([Snapshot("p", 1, 1.0, 0, 1, {}, [], None, None, 0, "s")], None, None, 1)
    assert none["share"] is None and none["snapshots_without_list"] == 1


def test_fraction_table_bins_by_wait_octave():
    waits = [{"wait_cycles": 2 ** 20, "holder_off_cycles": [0.0, 0.0]},
             {"wait_cycles": 2 ** 20 + 5, "holder_off_cycles": [2 ** 20, 2 ** 20]},
             {"wait_cycles": 2 ** 22, "holder_off_cycles": [2 ** 20, 2 ** 21]},   # middle 3/8
             {"wait_cycles": 2 ** 22, "holder_off_cycles": None}]
    t = fraction_table(waits)
    assert t["fraction_edges"] == [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]
    assert t["by_wait_octave"] == {"2^20": [1, 0, 0, 0, 0, 1], "2^22": [0, 0, 1, 0, 0, 0]}


def test_a_certain_holder_side_counts_in_the_share_when_only_the_waiter_side_is_uncertain():
    # holder 0 frozen [1000, 3000); waiter 1 off [2000, 3000); the wait is host [1000, 3000) +-10:
    # the holder was off for all of it, the waiter for 990 to 1000 of 2000 cycles (half: 1000)
    rows = [(0, "on", 0, 1000), (0, "frozen", 1000, 3000), (0, "on", 3000, 10_000),
            (1, "on", 0, 2000), (1, "off", 2000, 3000), (1, "on", 3000, 10_000)]
    tl = pd.DataFrame([(v, 10 + v, s, a, b, "p", 1) for v, s, a, b in rows],
                      columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])
    m = measure(wait(1, 0, 0, 2000), off_index(tl), ClockMap(CLOCK))
    assert (m["timeline_class"], m["timeline_holder"], m["timeline_waiter"]) == ("uncertain", "off", "uncertain")
    r = long_waits_share([Snapshot("p", 1, 1.0, 0, 10 ** 4, {}, [], [wait(1, 0, 0, 2000)], 1000, 0, "s")],
                         tl, CLOCK, 1000)
    assert (r["holder_off"], r["uncertain"], r["share"]) == (1, 0, 1.0)


def test_guest_classes_are_counted_against_the_timeline():
    waits = [wait(1, 0, 98_000, 10_000, "holder-preempted"),   # timeline: holder off 9k of 10k
             wait(1, 0, 89_500, 10_000, "holder-preempted"),   # timeline: holder off 500 of 10k
             wait(1, 0, 600_000, 10_000, "neither")]           # timeline: nobody off
    snap = Snapshot("host-load", 1, 1.0, 0, 10 ** 6, {}, [], waits, 1000, 0, "s")
    r = long_waits_share([snap], TL, CLOCK, 1000)
    assert r["from_timeline"] == 3 and r["holder_off"] == 1  # the timeline covers them all: it decides
    # steal time said 'holder off' where the holder was off 500 of 10k cycles: one disagreement
    assert r["disagreements"] == {"total": 1, "holder": 1, "waiter": 0, "steal_off_timeline_on": 1,
                                  "steal_silent_timeline_off": 0, "sides_compared": 6}
    assert r["agreement"]["guest_vs_timeline"] == {"holder-preempted": {"holder-preempted": 1, "neither": 1},
                                                   "neither": {"neither": 1}}
    # by the guest's own rule (any off time), the 500 cycles count
    assert r["agreement"]["guest_vs_timeline_any_overlap"] == {"holder-preempted": {"holder-preempted": 2},
                                                               "neither": {"neither": 1}}
    assert [w.get("timeline_class") for w in r["waits"]] == ["holder-preempted", "neither", "neither"]


def test_unknown_timeline_time_counts_as_either_and_never_decides_a_class():
    # Holder 0: frozen [1000, 2200), then unknown [2200, 3000) (a switch the host did not trace);
    # waiter 1 runs throughout. A wait at host [1000, 3000): the holder was surely off 1200 of
    # 2000 cycles (60 %) and at most all of them: holder-preempted whatever the unknown part was.
    rows = [(0, "on", 0, 1000), (0, "frozen", 1000, 2200), (0, "unknown", 2200, 3000), (0, "on", 3000, 10_000),
            (1, "on", 0, 10_000)]
    tl = pd.DataFrame([(v, 10 + v, s, a, b, "p", 1) for v, s, a, b in rows],
                      columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])
    idx = off_index(tl)
    assert off_cycles(idx, 0, 1000, 3000) == 1200 and off_cycles(idx, 0, 1000, 3000, most=True) == 2000
    assert off_during(idx, 0, 2500, 2600) is None      # only unknown time: not known either way
    assert off_during(idx, 0, 1500, 2600) is True
    assert off_during(idx, 0, 4000, 5000) is False
    zero = {**CLOCK, "points": [[0, 1000, 0.0], [10_000_000, 1000, 0.0]]}
    m = measure(wait(1, 0, 0, 2000), idx, ClockMap(zero))
    assert m["holder_off_cycles"] == [1200, 2000] and m["timeline_class"] == "holder-preempted"
    # The same wait shifted to host [1800, 3800): surely off 400 (20 %), at most 1200 (60 %):
    # the unknown part decides, so the wait is uncertain, never guessed 'neither'.
    m = measure(wait(1, 0, 800, 2000), idx, ClockMap(zero))
    assert m["holder_off_cycles"] == [400, 1200] and m["timeline_class"] == "uncertain"


# Per side, the timeline decides where it covers; steal time is evidence of 'off' only.
def _tl(rows, phase="p"):
    return pd.DataFrame([(v, 10 + v, s, a, b, phase, 1) for v, s, a, b in rows],
                        columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])


def _share(waits, tl, clock=CLOCK, threshold=1):
    return long_waits_share([Snapshot("p", 1, 1.0, 0, 1, {}, [], waits, 1, 0, "s")], tl, clock, threshold)


def test_a_frozen_holder_that_steal_time_misses_is_holder_off_by_the_timeline():
    # Holder 0 frozen [1000, 9000) (a frozen thread accrues no steal): steal time says 'neither'.
    tl = _tl([(0, "on", 0, 1000), (0, "frozen", 1000, 9000), (0, "on", 9000, 20_000), (1, "on", 0, 20_000)])
    r = _share([wait(1, 0, 0, 10_000, "neither")], tl)
    (w,) = r["waits"]
    assert (w["cause"], w["holder_side"], w["holder_source"], w["waiter_source"]) == \
        ("holder-preempted", "off", "timeline", "timeline")
    assert w["holder_disagrees"] and not w["waiter_disagrees"]
    assert r["disagreements"]["total"] == 1 and r["disagreements"]["steal_silent_timeline_off"] == 1
    assert (r["holder_off"], r["from_timeline"], r["from_guest"]) == (1, 1, 0)


def test_steal_time_decides_off_where_the_timeline_does_not_cover():
    # vCPU 0's rows end at 5000: the holder's side of a wait at host [6000, 16000) is not covered.
    tl = _tl([(0, "on", 0, 5000), (1, "on", 0, 20_000)])
    r = _share([wait(1, 0, 5000, 10_000, "holder-preempted")], tl)
    (w,) = r["waits"]
    assert (w["holder_side"], w["holder_source"]) == ("off", "steal")
    # the waiter's side is covered and the timeline has it running
    assert (w["waiter_side"], w["waiter_source"], w["cause"]) == ("on", "timeline", "holder-preempted")
    assert (r["holder_off"], r["from_guest"], r["disagreements"]["total"]) == (1, 1, 0)
    # with no timeline at all, steal time's 'off' still decides that side, and its 'neither' none
    r = _share([wait(1, 0, 5000, 10_000, "holder-preempted"), wait(1, 0, 5000, 10_000, "neither")], None, None)
    assert [(w["holder_side"], w["holder_source"], w["waiter_side"], w["cause"]) for w in r["waits"]] == \
        [("off", "steal", "unknown", "unknown"), ("unknown", "none", "unknown", "unknown")]
    assert (r["holder_off"], r["holder_on"], r["unknown"], r["share"]) == (1, 0, 1, 1.0)


def test_a_wait_no_source_covers_is_unknown():
    tl = _tl([(0, "on", 0, 5000), (1, "on", 0, 5000)])
    for cls in ("unknown", "neither"):  # TCG (no steal time), or steal time that saw nothing
        r = _share([wait(1, 0, 5000, 10_000, cls)], tl)
        (w,) = r["waits"]
        assert (w["cause"], w["holder_source"], w["waiter_source"]) == ("unknown", "none", "none")
        assert (r["unknown"], r["holder_on"], r["share"]) == (1, 0, None)
        assert r["sources"]["holder"] == {"timeline": 0, "steal": 0, "none": 1}


# A ticket queue: vCPU 0 holds the lock, frozen over host [1000, 61000); vCPU 1 queued behind
# it takes the lock at guest 60_000 (host 61_000) and runs; vCPU 2 waits guest [0, 100_000).
QUEUE_TL = [(0, "on", 0, 1000), (0, "frozen", 1000, 61_000), (0, "on", 61_000, 200_000),
            (1, "on", 0, 200_000), (2, "on", 0, 200_000)]


def test_a_placed_hand_over_measures_the_frozen_first_holders_share():
    placed = dict(wait(2, 0, 0, 100_000, holder_end=1), holds=[[0, -5_000], [1, 60_000]])
    r = _share([placed], _tl(QUEUE_TL))
    (w,) = r["waits"]
    # holder 0 off while it held the lock: [1010, 60990) at least, [990, 61010) at most (+-10)
    assert w["holder_off_cycles"] == [59_980.0, 60_000.0]
    assert (w["cause"], w["holder_side"], w["holders"]) == ("holder-preempted", "off", [0, 1])
    assert (r["holder_changed"], r["handovers_placed"], r["handovers_unplaced"]) == (1, 1, 0)
    # without the hand-over's moment (the guest's start and end holders only) it is uncertain
    guessed = _share([wait(2, 0, 0, 100_000, holder_end=1)], _tl(QUEUE_TL))["waits"][0]
    assert guessed["holder_off_cycles"] == [0.0, 60_000.0] and guessed["holder_side"] == "uncertain"
    # a hand-over whose hold was not traced falls back to the range for that gap only: CPU 0
    # then CPU 1 over [0, 90_000), CPU 3 from 90_000
    gap = dict(wait(2, 0, 0, 100_000, holder_end=3), holds=[[0, None], [1, None], [3, 90_000]])
    assert chain_pieces(LongWaits.of([gap]), 0, 0.0) == [(0, 1, 0.0, 90_000.0), (3, 3, 90_000.0, 100_000.0)]
    tl = _tl(QUEUE_TL + [(3, "off", 0, 200_000)])
    g = _share([gap], tl)
    (w,) = g["waits"]
    # vCPU 3 off for its 10_000 (+-10); vCPU 0 then 1 over [0, 90_000): 0 to 60_000 more
    assert w["holder_off_cycles"] == [9_980.0, 70_020.0] and w["holder_side"] == "uncertain"
    assert (g["handovers_placed"], g["handovers_unplaced"]) == (1, 1)


def test_waits_that_ended_after_the_repetition_are_counted_and_named():
    # The repetition runs from guest TSC 0 to 10^6; the trace session lists one more wait that
    # ended after the end snapshot. It is attributed and counted like the others, and named in
    # outside_repetition (the counters and the verdict leave it out).
    waits = [wait(0, 1, 100_000, 2 ** 19), wait(0, 1, 900_000, 2 ** 19)]
    r = long_waits_share([Snapshot("p", 1, 1.0, 0, 10 ** 6, {}, [], waits, 1, 0, "s")], None, None, 1)
    assert r["long_waits"] == 2 and r["outside_repetition"] == 1
    assert [w["in_repetition"] for w in r["waits"]] == [True, False]
