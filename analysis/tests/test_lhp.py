"""The LHP measurement on a synthetic timeline whose answers are known by construction."""
import pandas as pd
import pytest

from spinlab_report.lhp import (ClockMap, classify, fraction_table, guest_to_host, holder_off_range,
                                long_waits_share, measure, off_cycles, off_during, off_index)
from spinlab_report.load import Snapshot

# host = guest + 1000, to within +-10 cycles, over guest [0, 10M]
CLOCK = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10.0,
         "points": [[0, 1000, 10.0], [10_000_000, 1000, 10.0]]}
# host TSC; vCPU 0 off [100k, 200k) and frozen [500k, 510k); vCPU 1 off [300k, 400k); both covered 0..1M
ROWS = [(0, "on", 0, 100_000), (0, "off", 100_000, 200_000), (0, "on", 200_000, 500_000),
        (0, "frozen", 500_000, 510_000), (0, "on", 510_000, 1_000_000),
        (1, "on", 0, 300_000), (1, "off", 300_000, 400_000), (1, "on", 400_000, 1_000_000)]
TL = pd.DataFrame([(v, 10 + v, s, a, b, "host-load", 1) for v, s, a, b in ROWS],
                  columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])


def wait(cpu, holder, start_guest, cycles, cls="unknown", holder_end=None):
    return {"cpu": cpu, "class": "x", "start_tsc": start_guest, "wait_cycles": cycles, "holder_cpu": holder,
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
    host, bound = m.map(2500)                            # a step of 200 somewhere in (2000, 3000)
    assert host == pytest.approx(2900.0) and bound == pytest.approx(207.0)
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
    # the guest's own class wins over the timeline
    assert classify(wait(1, 0, 88_000, 10_000, "both"), idx, CLOCK) == ("both", "guest")


def test_a_wait_whose_class_depends_on_the_clock_bound_is_uncertain():
    idx = off_index(TL, "host-load", 1)
    # host [100_000 - 5_000, +10_000): holder 0 off exactly 5_000 = half; +-10 cycles decide it
    w = wait(1, 0, 94_000, 10_000)
    r = measure(w, idx, ClockMap(CLOCK))
    assert r["lhp"] == "uncertain"
    assert r["holder_off_cycles"] == [4990.0, 5010.0]
    # with a tighter clock (+-0) the same wait is exactly half: holder off
    exact = dict(CLOCK, points=[[0, 1000, 0.0], [10_000_000, 1000, 0.0]])
    assert measure(w, idx, ClockMap(exact))["lhp"] == "holder-preempted"
    # 100 cycles away from the threshold, +-10 cycles do not matter
    assert measure(wait(1, 0, 94_100, 10_000), idx, ClockMap(CLOCK))["lhp"] == "holder-preempted"
    assert measure(wait(1, 0, 93_900, 10_000), idx, ClockMap(CLOCK))["lhp"] == "neither"
    # outside the clock's sampled span the wait cannot be placed
    assert measure(wait(1, 0, 20_000_000, 10_000), idx, ClockMap(CLOCK))["lhp"] == "unknown"


def test_holder_change_is_attributed_in_order():
    # vCPU 2 waits while it runs throughout; the holder is vCPU 0 and then, from an unknown
    # moment, vCPU 1. Host [151k, 351k): vCPU 0 off [151k, 200k) = 49k, vCPU 1 off [300k, 351k) = 51k.
    tl = pd.concat([TL, pd.DataFrame([(2, 12, "on", 0, 1_000_000, "host-load", 1)], columns=TL.columns)])
    idx = off_index(tl, "host-load", 1)
    # switch at 351k: all on 0 -> 49k (the least); anywhere in [200k, 300k]: 49k + 51k (the most)
    assert holder_off_range(idx, [0, 1], 151_000, 351_000, 0) == (49_000, 100_000)
    assert holder_off_range(idx, [0], 151_000, 351_000, 0) == (49_000, 49_000)
    m = measure(wait(2, 0, 150_000, 200_000, holder_end=1), idx, ClockMap(CLOCK))
    assert m["holders"] == [0, 1]
    assert m["lhp"] == "uncertain"  # 24.5% to 50% of the wait: the switch moment decides
    # the first holder alone would have been a clear 'neither'
    assert measure(wait(2, 0, 150_000, 200_000), idx, ClockMap(CLOCK))["lhp"] == "neither"
    same = measure(wait(1, 0, 98_000, 10_000, holder_end=0), idx, ClockMap(CLOCK))
    assert same["holders"] == [0] and same["lhp"] == "holder-preempted"


def test_share_counts_threshold_uncertain_and_unknowns():
    waits = [wait(1, 0, 98_000, 2 ** 20),             # host [99k, 1.15M) runs past the span -> unknown
             wait(1, 0, 98_000, 10_000),              # below the threshold: ignored
             wait(1, 0, 10, 2 ** 20, "neither"),      # guest says holder ran
             wait(1, 0, 10, 2 ** 20, "holder-preempted")]
    snap = Snapshot("host-load", 1, 1.0, 0, 10 ** 6, {}, [], waits, 2 ** 19, 0, "s")
    r = long_waits_share([snap], TL, CLOCK, 2 ** 20)
    assert (r["long_waits"], r["holder_off"], r["holder_on"], r["unknown"], r["uncertain"]) == (3, 1, 1, 1, 0)
    assert (r["from_guest"], r["from_timeline"]) == (2, 0)
    assert r["share"] == pytest.approx(1 / 2)
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
    assert (m["lhp"], m["holder_side"]) == ("uncertain", "off")
    r = long_waits_share([Snapshot("p", 1, 1.0, 0, 10 ** 4, {}, [], [wait(1, 0, 0, 2000)], 1000, 0, "s")],
                         tl, CLOCK, 1000)
    assert (r["holder_off"], r["uncertain"], r["share"]) == (1, 0, 1.0)


def test_guest_classes_are_counted_against_the_timeline():
    waits = [wait(1, 0, 98_000, 10_000, "holder-preempted"),   # timeline: holder off 9k of 10k
             wait(1, 0, 89_500, 10_000, "holder-preempted"),   # timeline: holder off 500 of 10k
             wait(1, 0, 600_000, 10_000, "neither")]           # timeline: nobody off
    snap = Snapshot("host-load", 1, 1.0, 0, 10 ** 6, {}, [], waits, 1000, 0, "s")
    r = long_waits_share([snap], TL, CLOCK, 1000)
    assert r["from_guest"] == 3 and r["holder_off"] == 2  # the guest's class is the one used
    assert r["agreement"]["guest_vs_timeline"] == {"holder-preempted": {"holder-preempted": 1, "neither": 1},
                                                   "neither": {"neither": 1}}
    # by the guest's own rule (any off time), the 500 cycles count
    assert r["agreement"]["guest_vs_timeline_any_overlap"] == {"holder-preempted": {"holder-preempted": 2},
                                                               "neither": {"neither": 1}}
    assert [w.get("timeline_lhp") for w in r["waits"]] == ["holder-preempted", "neither", "neither"]


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
    assert m["holder_off_cycles"] == [1200, 2000] and m["lhp"] == "holder-preempted"
    # The same wait shifted to host [1800, 3800): surely off 400 (20 %), at most 1200 (60 %):
    # the unknown part decides, so the wait is uncertain, never guessed 'neither'.
    m = measure(wait(1, 0, 800, 2000), idx, ClockMap(zero))
    assert m["holder_off_cycles"] == [400, 1200] and m["lhp"] == "uncertain"
