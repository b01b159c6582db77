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
    from spinlab_report import reader, summary
    from conftest import BASIC
    s = summary.build(reader.load_run(BASIC), summary.Options(long_wait_threshold=2 ** 24))
    l = s["phases"]["host-load"]["lhp"]  # only the three waits of 17M, 20M and 30M cycles remain
    assert (l["long_waits"], l["holder_off"], l["holder_on"], l["unknown"]) == (3, 0, 2, 1)
    assert s["phases"]["idle-host"]["lhp"]["share"] is None


def test_unknown_timeline_spans_are_counted_and_named(run_copy):
    """timeline.csv's 'unknown' rows: their number, cycles and share of the vCPU time, per phase
    and per run, and a sentence in the problems; none in run-basic."""
    from spinlab_report import reader, summary
    from conftest import BASIC
    s = summary.build(reader.load_run(BASIC), summary.Options())
    # 2 vCPUs x 4 repetitions x 1e9 cycles, all known
    assert s["timeline_unknown"] == {"spans": 0, "cycles": 0, "vcpu_cycles": 8_000_000_000, "share": 0.0,
                                     "per_repetition": [
                                         {"phase": p, "rep": r, "spans": 0, "cycles": 0, "vcpu_cycles": 2_000_000_000,
                                          "share": 0.0} for p, r in (("host-load", 1), ("host-load", 2),
                                                                     ("idle-host", 1), ("idle-host", 2))]}
    assert not any("unknown state" in p for p in s["problems"])
    # two unknown spans of 1M and 3M cycles in host-load r2, cut out of vCPU 1's first 'on' row
    path = run_copy / "timeline.csv"
    lines = path.read_text().splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("1,1002,on,") and l.endswith(",host-load,2"))
    v, tid, _, a, b, ph, rep = lines[i].split(",")
    a = int(a)
    lines[i:i + 1] = [f"1,1002,unknown,{a},{a + 1_000_000},host-load,2", f"1,1002,on,{a + 1_000_000},{a + 2_000_000},host-load,2",
                      f"1,1002,unknown,{a + 2_000_000},{a + 5_000_000},host-load,2", f"1,1002,on,{a + 5_000_000},{b},host-load,2"]
    path.write_text("\n".join(lines) + "\n")
    s = summary.build(reader.load_run(str(run_copy)), summary.Options())
    u = s["timeline_unknown"]
    assert (u["spans"], u["cycles"], u["share"]) == (2, 4_000_000, 0.0005)
    assert [(r["phase"], r["rep"], r["spans"]) for r in u["per_repetition"] if r["spans"]] == [("host-load", 2, 2)]
    assert s["phases"]["host-load"]["timeline_unknown"]["cycles"] == 4_000_000
    assert s["phases"]["idle-host"]["timeline_unknown"]["spans"] == 0
    (p,) = [p for p in s["problems"] if "unknown state" in p]
    assert p.startswith("timeline.csv: 2 span(s) of unknown state, 4000000 cycles, 0.050% of the vCPU time")


def test_steal_time_disagreeing_with_the_timeline_is_a_problem_named(run_copy):
    """The 6M wait of host-load r1 (1 -> 0, steal time 'neither'): with vCPU 0 off for all of
    it on the timeline, the timeline decides holder-preempted and the problems count one
    disagreement of steal time's kind."""
    from spinlab_report import reader, summary
    path = run_copy / "timeline.csv"
    lines = path.read_text().splitlines()
    # host [3_200_001_000, 3_206_001_000): vCPU 0 'on' from the r1 start is cut there
    i = next(k for k, l in enumerate(lines) if l.startswith("0,1001,on,3000001000,"))
    b = lines[i].split(",")[4]
    lines[i:i + 1] = ["0,1001,on,3000001000,3200001000,host-load,1", "0,1001,off,3200001000,3206001000,host-load,1",
                      f"0,1001,on,3206001000,{b},host-load,1"]
    path.write_text("\n".join(lines) + "\n")
    s = summary.build(reader.load_run(str(run_copy)), summary.Options())
    l = s["phases"]["host-load"]["lhp"]
    assert (l["holder_off"], l["holder_on"], l["disagreements"]["total"]) == (4, 2, 1)
    assert l["disagreements"]["steal_silent_timeline_off"] == 1
    (p,) = [p for p in s["problems"] if "disagreed" in p]
    assert p.startswith("Phase host-load: steal time and the host timeline disagreed on 1 of 4 wait sides")


def test_a_malformed_holds_list_is_named(run_copy):
    """A long wait's "holds" must be [[cpu, from_tsc or null], ...]: anything else leaves the
    snapshot out with a sentence naming the field; a well-formed one is read as it is."""
    import json as _json
    from spinlab_report import reader
    path = run_copy / "snapshots" / "host-load-r1.json"
    d = _json.loads(path.read_text())
    d["long_waits"][0]["holds"] = [[1, None], [0, 3_102_000_000]]
    path.write_text(_json.dumps(d))
    run = reader.load_run(str(run_copy))
    (s,) = [s for s in run.snapshots if (s.phase, s.rep) == ("host-load", 1)]
    assert s.long_waits[0]["holds"] == [[1, None], [0, 3_102_000_000]] and s.long_waits[1]["holds"] is None
    d["long_waits"][0]["holds"] = [[1, None, 5]]
    path.write_text(_json.dumps(d))
    run = reader.load_run(str(run_copy))
    assert not [s for s in run.snapshots if (s.phase, s.rep) == ("host-load", 1)]
    assert any("long_waits[0]: 'holds' must be a non-empty list of [cpu, from_tsc or null]" in p for p in run.problems)
