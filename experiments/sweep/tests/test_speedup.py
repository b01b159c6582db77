"""The VEE'13-form speedup table: each lock's throughput over the ticket cell with the same other
axis values, per phase, with the Welch interval of the log ratio; speedup.csv and sweep.html."""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from spinlab_sweep import speedup, sweep_html  # noqa: E402

PLAN = {"name": "m", "axes": [{"key": "vm.lock", "values": ["ticket", "pticket", "mcs"]},
                              {"key": "vm.cpus", "values": ["2", "4"]}]}


def row(lock, cpus, thr_idle, thr_load=None, spin=(100.0, 120.0, 110.0)):
    reps = {"idle-host": {"throughput": list(thr_idle), "spin_per_acquisition": list(spin),
                          "lhp_waits_per_s": {"mean": 1.5, "low": 1.0, "high": 2.0}}}
    if thr_load is not None:
        reps["host-load"] = {"throughput": list(thr_load), "spin_per_acquisition": list(spin),
                             "lhp_waits_per_s": None}
    phases = {p: {"throughput": sum(r["throughput"]) / len(r["throughput"])} for p, r in reps.items()}
    return {"cell": f"lock-{lock}_cpus-{cpus}", "values": {"vm.lock": lock, "vm.cpus": str(cpus)},
            "state": "complete", "phases": phases, "reps": reps,
            "meta": {"vcpus": cpus, "host": {"cpus": 2}}}


ROWS = [row("ticket", 2, [100, 110, 90], [10, 12, 8]), row("ticket", 4, [50, 55, 45], [1, 1.2, 0.8]),
        row("pticket", 2, [100, 110, 90], [40, 48, 32]), row("pticket", 4, [100, 110, 90], [30, 36, 24]),
        row("mcs", 2, [200, 220, 180]), {"cell": "lock-mcs_cpus-4", "values": {"vm.lock": "mcs", "vm.cpus": "4"},
                                          "state": "missing", "phases": {}, "reps": {}, "meta": None}]


def by(entries, lock, cpus, phase):
    (e,) = [e for e in entries if e["lock"] == lock and e["others"] == {"vm.cpus": str(cpus)} and e["phase"] == phase]
    return e


def test_each_lock_is_compared_with_the_ticket_cell_of_the_same_other_axes():
    t = speedup.table(PLAN, ROWS)
    # the same throughputs, against the 2-vCPU ticket cell: 1x exactly; against the 4-vCPU one: 2x
    assert by(t, "pticket", 2, "idle-host")["speedup"]["ratio"] == 1.0
    assert math.isclose(by(t, "pticket", 4, "idle-host")["speedup"]["ratio"], 2.0, rel_tol=1e-3)
    e = by(t, "pticket", 4, "host-load")
    assert math.isclose(e["speedup"]["ratio"], 30.0, rel_tol=0.02)
    assert e["speedup"]["low"] < e["speedup"]["ratio"] < e["speedup"]["high"] and e["speedup"]["p"] < 0.01
    assert e["overcommit"] == 2.0 and by(t, "pticket", 2, "host-load")["overcommit"] == 1.0
    # mcs at 2 vCPUs has no host-load phase, and its 4-vCPU cell never ran: neither is in the table
    assert [(e["lock"], e["others"]["vm.cpus"], e["phase"]) for e in t if e["lock"] == "mcs"] == [("mcs", "2", "idle-host")]
    assert not [e for e in t if e["lock"] == "ticket"]
    # sorted by overcommit, then phase, then lock
    assert [e["overcommit"] for e in t] == sorted(e["overcommit"] for e in t)


def test_no_table_without_a_ticket_cell():
    plan = {"name": "m", "axes": [{"key": "vm.lock", "values": ["tas", "mcs"]}]}
    assert not speedup.applies(plan) and speedup.table(plan, ROWS) == []
    assert sweep_html.speedup_html(plan, ROWS) == ""


def test_csv_and_html_carry_the_table(tmp_path):
    t = speedup.table(PLAN, ROWS)
    path = tmp_path / "speedup.csv"
    speedup.write_csv(str(path), t)
    lines = list(csv.DictReader(open(path)))
    assert len(lines) == len(t) == 5
    line = [x for x in lines if x["lock"] == "pticket" and x["overcommit"] == "2" and x["phase"] == "host-load"][0]
    assert math.isclose(float(line["speedup"]), 30.0, rel_tol=0.02) and line["base_cell"] == "lock-ticket_cpus-4"
    assert float(line["spin_per_acquisition"]) == 110.0 and line["lhp_waits_per_s"] == ""
    page = sweep_html.speedup_html(PLAN, ROWS)
    assert "Speedup over the ticket lock" in page and "5.32x" in page and "7.91x" in page
    assert "30.0" in page or "29.9" in page or "30.1" in page
    assert "spin cycles per acquisition" in page


def test_cells_without_reports_are_named_as_the_reason_for_an_empty_table():
    # a sweep run with --no-cell-report: every cell complete, none with figures
    bare = [dict(r, phases={}, reps={}) for r in ROWS if r["state"] == "complete"]
    page = sweep_html.speedup_html(PLAN, bare)
    assert "No pair of cells" in page and "5 complete cell(s) have no report" in page
    assert "spinlab-sweep aggregate" in page
    # cells that have reports but no pair to compare say nothing about reports
    assert "have no report" not in sweep_html.speedup_html(PLAN, [r for r in ROWS if r["values"]["vm.lock"] == "mcs"])


def pair(entries, faster, slower, cpus, phase):
    (e,) = [e for e in entries if (e["faster"], e["slower"]) == (faster, slower)
            and e["others"] == {"vm.cpus": str(cpus)} and e["phase"] == phase]
    return e


def test_every_two_locks_are_compared_with_the_faster_first():
    p = speedup.pairs(PLAN, ROWS)
    # 2 vCPUs, idle host: mcs (200) over ticket and pticket (100 each), which tie
    e = pair(p, "mcs", "ticket", 2, "idle-host")
    assert math.isclose(e["speedup"]["ratio"], 2.0, rel_tol=1e-3) and e["separated"]
    assert e["cell"] == "lock-mcs_cpus-2" and e["base_cell"] == "lock-ticket_cpus-2" and e["overcommit"] == 1.0
    tie = pair(p, "ticket", "pticket", 2, "idle-host")  # equal: the axis order decides which is first
    assert tie["speedup"]["ratio"] == 1.0 and not tie["separated"]
    # 4 vCPUs beside the hog: pticket 30x ticket; mcs's cell never ran, so no pair names it there
    e = pair(p, "pticket", "ticket", 4, "host-load")
    assert math.isclose(e["speedup"]["ratio"], 30.0, rel_tol=0.02) and e["separated"] and e["overcommit"] == 2.0
    assert not [e for e in p if "mcs" in (e["faster"], e["slower"]) and e["others"] == {"vm.cpus": "4"}]
    # one entry per two locks with throughputs: 3 + 1 at 2 vCPUs idle and loaded, 1 + 1 at 4
    assert len(p) == 3 + 1 + 1 + 1
    # a pair the interval does not separate: within-noise ratio, interval across 1
    rows = [row("ticket", 2, [100, 130, 70]), row("mcs", 2, [110, 80, 125])]
    (e,) = speedup.pairs(PLAN, rows)
    assert e["speedup"]["low"] < 1 < e["speedup"]["high"] and not e["separated"]


def test_pairs_csv_and_html_say_which_lock_beats_which(tmp_path):
    p = speedup.pairs(PLAN, ROWS)
    path = tmp_path / "pairs.csv"
    speedup.write_pairs_csv(str(path), p)
    lines = list(csv.DictReader(open(path)))
    assert len(lines) == len(p)
    line = [x for x in lines if (x["faster"], x["slower"], x["overcommit"], x["phase"]) == ("pticket", "ticket", "2", "host-load")][0]
    assert line["separated"] == "1" and math.isclose(float(line["speedup"]), 30.0, rel_tol=0.02)
    page = sweep_html.pairs_html(PLAN, ROWS)  # only above 1 vCPU per host CPU: the 4-vCPU cells
    assert "Lock against lock" in page and "pticket beats ticket 30" in page.replace("29.9", "30").replace("30.1", "30")
    assert "mcs" not in page.split("</p>", 1)[1]  # mcs has no 4-vCPU cell
    assert sweep_html.pairs_html({"name": "m", "axes": [{"key": "vm.cpus", "values": ["2"]}]}, ROWS) == ""


def test_a_phase_with_a_repetition_without_throughput_is_named_not_compared():
    stalled = row("mcs", 4, [3.0, 0.0, 1.5])  # one repetition where the lock made no progress
    rows = [r for r in ROWS if r["cell"] != "lock-mcs_cpus-4"] + [stalled]
    assert not [e for e in speedup.table(PLAN, rows) if e["cell"] == "lock-mcs_cpus-4"]
    assert not [e for e in speedup.pairs(PLAN, rows) if "lock-mcs_cpus-4" in (e["cell"], e["base_cell"])]
    assert speedup.without_throughput(rows) == [("lock-mcs_cpus-4", "idle-host", [3.0, 0.0, 1.5])]
    page = sweep_html.speedup_html(PLAN, rows)
    assert "Left out of the ratios" in page and "lock-mcs_cpus-4, idle-host: 3, 0, 1.5 per second" in page
    assert "Left out of the ratios" not in sweep_html.speedup_html(PLAN, ROWS)
