"""The LHP join on a synthetic timeline whose answers are known by construction."""
import pandas as pd
import pytest

from spinlab_report.lhp import classify, guest_to_host, long_waits_share, off_during, off_index
from spinlab_report.load import Snapshot

CLOCK = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0}
# host TSC; vCPU 0 off [100k, 200k) and frozen [500k, 510k); vCPU 1 off [300k, 400k); both covered 0..1M
ROWS = [(0, "on", 0, 100_000), (0, "off", 100_000, 200_000), (0, "on", 200_000, 500_000),
        (0, "frozen", 500_000, 510_000), (0, "on", 510_000, 1_000_000),
        (1, "on", 0, 300_000), (1, "off", 300_000, 400_000), (1, "on", 400_000, 1_000_000)]
TL = pd.DataFrame([(v, 10 + v, s, a, b, "host-load", 1) for v, s, a, b in ROWS],
                  columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep"])


def wait(cpu, holder, start_guest, cycles, cls="unknown"):
    return {"cpu": cpu, "class": "x", "start_tsc": start_guest, "wait_cycles": cycles, "holder_cpu": holder,
            "lhp_class": cls}


def test_off_during_edges():
    idx = off_index(TL)
    assert off_during(idx, 0, 150_000, 160_000) is True      # inside an off interval
    assert off_during(idx, 0, 90_000, 100_001) is True       # overlaps its first cycle
    assert off_during(idx, 0, 200_000, 300_000) is False     # starts exactly when it ends: ran throughout
    assert off_during(idx, 0, 50_000, 100_000) is False      # ends exactly when it starts
    assert off_during(idx, 0, 505_000, 505_001) is True      # frozen counts as off
    assert off_during(idx, 0, 0, 1_000_000) is True          # spans several intervals
    assert off_during(idx, 1, 990_000, 1_100_000) is None    # runs past the recorded span
    assert off_during(idx, 7, 0, 10) is None and off_during(idx, None, 0, 10) is None


def test_clock_mapping_with_drift():
    assert guest_to_host(5000, CLOCK) == 6000
    drift = {"offset_cycles": 0, "drift_ppm": 100.0, "ref_guest_tsc": 1_000_000}
    assert guest_to_host(2_000_000, drift) == pytest.approx(2_000_100)
    assert guest_to_host(1_000_000, drift) == pytest.approx(1_000_000)


def test_classify_through_the_clock():
    idx = off_index(TL, "host-load", 1)
    # guest [98_000, 108_000) -> host [99_000, 109_000): holder 0 off, waiter 1 on
    assert classify(wait(1, 0, 98_000, 10_000), idx, CLOCK) == ("holder-preempted", "timeline")
    # without the 1000-cycle offset this wait would end before vCPU 0's off interval began
    assert classify(wait(1, 0, 89_500, 10_000), idx, CLOCK) == ("holder-preempted", "timeline")
    assert classify(wait(1, 0, 88_000, 10_000), idx, CLOCK) == ("neither", "timeline")
    assert classify(wait(0, 1, 140_000, 200_000), idx, CLOCK) == ("both", "timeline")
    assert classify(wait(0, 1, 600_000, 1000), idx, CLOCK) == ("neither", "timeline")
    assert classify(wait(0, 1, 150_000, 1000), idx, CLOCK) == ("waiter-preempted", "timeline")
    assert classify(wait(0, None, 150_000, 1000), idx, CLOCK) == ("unknown", "none")
    assert classify(wait(0, 1, 150_000, 1000), None, None) == ("unknown", "none")
    # the guest's own class wins over the timeline
    assert classify(wait(1, 0, 88_000, 10_000, "both"), idx, CLOCK) == ("both", "guest")


def test_share_counts_threshold_and_unknowns():
    waits = [wait(1, 0, 98_000, 2 ** 20),             # holder 0 off at [99k..) -> off
             wait(0, 1, 600_000, 2 ** 20 - 1),        # below the threshold: ignored
             wait(0, 1, 600_000, 2 ** 21),            # host [601k, 2.7M) runs past the span -> unknown
             wait(1, 0, 10, 2 ** 20, "neither"),      # guest says holder ran
             wait(1, 0, 10, 2 ** 20, "holder-preempted")]
    snap = Snapshot("host-load", 1, 1.0, 0, 10 ** 6, {}, [], waits, 2 ** 19, 0, "s")
    r = long_waits_share([snap], TL, CLOCK, 2 ** 20)
    assert (r["long_waits"], r["holder_off"], r["holder_on"], r["unknown"]) == (4, 2, 1, 1)
    assert (r["from_guest"], r["from_timeline"]) == (2, 1)
    assert r["share"] == pytest.approx(2 / 3)
    none = long_waits_share([Snapshot("p", 1, 1.0, 0, 1, {}, [], None, None, 0, "s")], None, None, 1)
    assert none["share"] is None and none["snapshots_without_list"] == 1


def test_holder_off_fraction_is_the_measured_overlap():
    """run-basic host-load r1: the 4.5M wait is [3300.001M, 3304.501M) in host TSC and its holder,
    vCPU 1, is off [3302M, 3310M): 2.501M of the wait (see tests/data/README.md)."""
    from conftest import BASIC
    from spinlab_report import fig_holder_off, load
    run = load.load_run(BASIC)
    pts, missing, given = fig_holder_off.points(run, 1 << 20)
    by_len = {q[1]: q[2] for q in pts}
    assert by_len[4_500_000] == pytest.approx(2_501_000 / 4_500_000)
    assert by_len[5_000_000] == 0.0 and by_len[17_000_000] == 0.0
    # 7M wait of r2, holder vCPU 0 frozen [7105M, 7106M): 1M of 7M
    assert by_len[7_000_000] == pytest.approx(1 / 7)
    # the 30M wait runs past the timeline's end: no fraction
    assert 30_000_000 not in by_len and missing == 1 and given == 0


def test_holder_off_fraction_prefers_the_attributions_range():
    from spinlab_report.fig_holder_off import attributed_fraction
    w = {"wait_cycles": 1000, "holder_off_cycles": [400, 800]}
    assert attributed_fraction(w) == (pytest.approx(0.6), 0.4, 0.8)
    assert attributed_fraction({"wait_cycles": 1000, "holder_off_cycles": [900, 1200]})[2] == 1.0
    assert attributed_fraction({"wait_cycles": 1000}) is None
