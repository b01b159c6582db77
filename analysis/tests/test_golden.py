"""run-basic (hand-made, see data/README.md) against its hand-derived table and summary."""
import json
import os

import pytest

from conftest import EXPECTED


def test_table_txt_matches_expected(basic_report):
    out, paths = basic_report
    assert open(paths["table"]).read() == open(os.path.join(EXPECTED, "table.txt")).read()


def test_table_csv_rows(basic_report):
    out, paths = basic_report
    lines = open(paths["csv"]).read().splitlines()
    assert lines[0] == "phase,row,k,lo_cycles,hi_cycles,count,percent"
    assert "idle-host,wait,9,512,1024,16,8.0000" in lines
    assert "host-load,wait,24,16777216,33554432,3,3.0000" in lines
    assert "host-load,overflow,,,,1,1.0000" in lines
    assert "idle-host,uncontended,,,,180,90.0000" in lines
    assert len(lines) == 1 + 2 * (64 + 2)


def test_summary_matches_hand_derived_values(basic_report):
    out, paths = basic_report
    s = json.load(open(paths["summary"]))
    idle, load = s["phases"]["idle-host"], s["phases"]["host-load"]
    assert s["baseline_phase"] == "idle-host" and s["state"] == "complete"
    assert (idle["acquisitions"], idle["contended"], idle["overflow"]) == (200, 20, 0)
    assert (load["acquisitions"], load["contended"], load["timed_waits"], load["overflow"]) == (100, 20, 19, 1)
    assert idle["contended_share"] == 0.1 and load["contended_share"] == 0.2
    assert idle["wait_p50_cycles"] == pytest.approx(2 ** 9.625, abs=0.1)
    assert idle["wait_p99_cycles"] == pytest.approx(2 ** 20.8, abs=0.1)
    assert idle["wait_p999_cycles"] == pytest.approx(2 ** 20.98, abs=0.1)
    assert load["wait_p50_cycles"] == pytest.approx(2 ** 10.375, abs=0.1)
    assert load["wait_p99_cycles"] == pytest.approx(2 ** (24 + (0.99 * 19 - 16) / 3), abs=0.1)
    assert idle["share_waits_ge_2^20"] == 0.05 and load["share_waits_ge_2^20"] == pytest.approx(7 / 19, abs=1e-6)
    assert idle["lhp"]["share"] == 0.0 and idle["lhp"]["holder_on"] == 1
    l = load["lhp"]
    assert (l["long_waits"], l["holder_off"], l["holder_on"], l["unknown"]) == (7, 3, 3, 1)
    # the timeline covers every wait it can place, so it decides all six sides it covers (steal
    # time said 'holder-preempted' and 'neither' for two of them, and the timeline agrees)
    assert (l["from_guest"], l["from_timeline"], l["share"]) == (0, 6, 0.5)
    assert l["disagreements"]["total"] == 0 and l["disagreements"]["sides_compared"] == 4
    assert l["sources"]["holder"] == {"timeline": 6, "steal": 0, "none": 1}
    assert idle["throughput"]["mean"] == 1050.0 and load["throughput"]["mean"] == 550.0
    assert idle["throughput"]["low"] == pytest.approx(414.69, abs=0.01)
    assert load["throughput"]["change_vs_baseline_pct"] == pytest.approx(-47.619, abs=1e-3)
    assert s["problems"] == ["Phase host-load: 1 contended wait(s) could not be timed (overflow); "
                             "they are counted in the table but not in CDFs or percentiles."]


def test_threshold_option_changes_the_lhp_set():
    from spinlab_report import load, summary
    from conftest import BASIC
    s = summary.build(load.load_run(BASIC), summary.Options(threshold=2 ** 24))
    l = s["phases"]["host-load"]["lhp"]  # only the three waits of 17M, 20M and 30M cycles remain
    assert (l["long_waits"], l["holder_off"], l["holder_on"], l["unknown"]) == (3, 0, 2, 1)
    assert s["phases"]["idle-host"]["lhp"]["share"] is None
