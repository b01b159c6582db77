"""The mitigation study's table (issue 39) on small synthetic sweep results: per cell the share of
spin behind a preempted holder, the long waits' cause mix, halts and kicks per second, and the
measured order under overcommit beside the published figures. Each column is checked by value."""
import csv
import json
import math
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from spinlab_sweep import aggregate, report_lib, speedup, sweep_html  # noqa: E402

LOCKS = ["ticket", "tas", "pvqspin", "mcs"]
PLAN = {"name": "mitigations", "axes": [{"key": "workload", "values": ["kmix"]},
                                        {"key": "vm.lock", "values": LOCKS},
                                        {"key": "vm.cpus", "values": ["4"]}]}
CAUSES = {"long_waits": 10, "holder-preempted": 6, "waiter-preempted": 1, "both": 1, "neither": 2,
          "uncertain": 3, "unknown": 4}


def row(lock, thr, share, halts, kicks):
    reps = {"host-load": {"throughput": list(thr), "spin_per_acquisition": [50.0, 70.0],
                          "lhp_waits_per_s": {"mean": 2.0, "low": 1.0, "high": 3.0},
                          "holder_off_spin_share": list(share), "causes": aggregate.cause_mix(CAUSES),
                          "pv_halts_per_s": list(halts), "pv_kicks_per_s": list(kicks)}}
    return {"cell": f"workload-kmix_lock-{lock}_cpus-4",
            "values": {"workload": "kmix", "vm.lock": lock, "vm.cpus": "4"}, "state": "complete",
            "phases": {"host-load": {"throughput": sum(thr) / len(thr)}}, "reps": reps,
            "meta": {"vcpus": 4, "host": {"cpus": 2}}}


ROWS = [row("ticket", [100, 100, 100], [0.8, 0.6], [], []),
        row("tas", [300, 310, 290], [0.1, 0.3], [], []),
        row("pvqspin", [200, 210, 190], [0.05, 0.15], [1000.0, 3000.0], [900.0, 2900.0]),
        row("mcs", [50, 52, 48], [0.9, 0.7], [], [])]


def test_cause_mix_is_the_share_of_decided_waits():
    mix = aggregate.cause_mix(CAUSES)
    assert mix == {"holder-preempted": 0.6, "waiter-preempted": 0.1, "both": 0.1, "n": 10}
    assert aggregate.cause_mix({"neither": 0}) is None and aggregate.cause_mix(None) is None


def test_csv_columns(tmp_path):
    t = speedup.table(PLAN, ROWS)
    assert [e["lock"] for e in t] == ["tas", "pvqspin", "mcs"]
    path = tmp_path / "speedup.csv"
    speedup.write_csv(str(path), t)
    lines = {x["lock"]: x for x in csv.DictReader(open(path))}
    pv = lines["pvqspin"]
    assert math.isclose(float(pv["speedup"]), 2.0, rel_tol=0.01)
    assert float(pv["speedup_low"]) < 2.0 < float(pv["speedup_high"])
    assert math.isclose(float(pv["holder_off_spin_share"]), 0.1, rel_tol=1e-6)
    assert float(pv["holder_preempted"]) == 0.6 and float(pv["waiter_preempted"]) == 0.1
    assert float(pv["both"]) == 0.1 and pv["causes_n"] == "10"
    assert float(pv["pv_halts_per_s"]) == 2000.0 and float(pv["pv_kicks_per_s"]) == 1900.0
    assert lines["tas"]["pv_halts_per_s"] == "" and lines["tas"]["pv_kicks_per_s"] == ""
    assert math.isclose(float(lines["mcs"]["holder_off_spin_share"]), 0.8, rel_tol=1e-6)
    assert lines["tas"]["others"] == "workload=kmix;vm.cpus=4"


def test_measured_order_under_overcommit():
    t = speedup.table(PLAN, ROWS)
    (o,) = speedup.measured_order(t)
    assert o["overcommit"] == 2.0 and o["phase"] == "host-load"
    assert [lock for lock, *_ in o["order"]] == ["tas", "pvqspin", "ticket", "mcs"]
    assert speedup.order_text(o) == "tas 3.00x > pvqspin 2.00x > ticket 1x > mcs 0.50x"
    # at 1 vCPU per host CPU or below there is no order to state
    flat = [dict(e, overcommit=1.0) for e in t]
    assert speedup.measured_order(flat) == []


def test_html_has_every_column_and_the_published_figures():
    page = sweep_html.speedup_html(PLAN, ROWS)
    assert "tas 3.00x &gt; pvqspin 2.00x &gt; ticket 1x &gt; mcs 0.50x" in page
    for text in ("5.32x", "7.91x", "1.08x", "1.06x", "1.70x", "1.74x", "cd0272fab785"):
        assert text in page
    # the pvqspin cell's row: share 10.0 %, mix 60 % / 10 % / 10 % (n = 10), 2000 halts/s, 1900 kicks/s
    pv_row = [r for r in page.split("<tr>") if "<td>pvqspin</td>" in r][0]
    assert "<td>10.0%</td>" in pv_row
    assert "<td>60% / 10% / 10% <small>(n = 10)</small></td>" in pv_row
    assert "<td>2000</td><td>1900</td>" in pv_row
    ticket_row = [r for r in page.split("<tr>") if "<td>ticket</td>" in r][0]
    assert "<td>70.0%</td>" in ticket_row and "<td></td><td></td>" in ticket_row  # no halts, no kicks


def test_pv_counters_are_read_per_cpu_and_made_rates(tmp_path):
    snap = {"cpus": [{"cpu": 0, "pv_halts": 30, "pv_kicks": 20, "classes": {}},
                     {"cpu": 1, "pv": {"pv_halts": 10, "pv_kicks": 4}, "classes": {}},
                     {"cpu": 2, "classes": {"sched": {"pv_halts": 2, "pv_kicks": 1},
                                            "heap": {"pv_halts": 3, "pv_kicks": 0}}}]}
    os.makedirs(tmp_path / "snapshots")
    with open(tmp_path / "snapshots" / "host-load-r1.json", "w") as f:
        json.dump(snap, f)
    s = SimpleNamespace(name="snapshots/host-load-r1.json", duration_s=2.0)
    assert report_lib.pv_rates(str(tmp_path), s) == {"pv_halts": 22.5, "pv_kicks": 12.5}
    with open(tmp_path / "snapshots" / "host-load-r1.json", "w") as f:
        json.dump({"cpus": [{"cpu": 0, "classes": {}}]}, f)
    assert report_lib.pv_rates(str(tmp_path), s) == {"pv_halts": None, "pv_kicks": None}


def test_holder_off_spin_share(monkeypatch):
    stats = [SimpleNamespace(counts={"wait_cycles_sum": 3000}), SimpleNamespace(counts={"wait_cycles_sum": 1000})]
    snap = SimpleNamespace(stats=stats)
    monkeypatch.setattr(report_lib.report, "rep_verdict", lambda run, s, thr: {"holder_off_cycles": 1000})
    assert report_lib.holder_off_spin_share(None, snap, 1 << 20) == 0.25
    monkeypatch.setattr(report_lib.report, "rep_verdict", lambda run, s, thr: {"holder_off_cycles": None})
    assert report_lib.holder_off_spin_share(None, snap, 1 << 20) is None


def test_a_neighbours_phase_counts_every_vms_vcpus():
    """A co-located VM's phase is grouped at the overcommit of all VMs (meta.json's
    neighbours.overcommit), not at the measured VM's alone."""
    rows = []
    for r in ROWS:
        r = json.loads(json.dumps(r))
        r["reps"]["neighbours-1"] = r["reps"]["host-load"]
        r["meta"]["neighbours"] = {"overcommit": {"host-load": 2.0, "neighbours-1": 3.0}}
        rows.append(r)
    t = speedup.table(PLAN, rows)
    assert {(e["phase"], e["overcommit"]) for e in t} == {("host-load", 2.0), ("neighbours-1", 3.0)}
    assert [o["overcommit"] for o in speedup.measured_order(t)] == [2.0, 3.0]
    assert {(e["phase"], e["overcommit"]) for e in speedup.pairs(PLAN, rows)} == {("host-load", 2.0),
                                                                                  ("neighbours-1", 3.0)}
    # without neighbours in meta.json: the measured VM's vCPUs over the host's CPUs
    assert speedup.overcommit({"vcpus": 4, "host": {"cpus": 2}}, "neighbours-1") == 2.0
