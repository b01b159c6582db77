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

