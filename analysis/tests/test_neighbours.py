"""neighbours-N phases: each neighbour VM's counters (snapshots/neighbours/<phase>-r<rep>-n<k>.json)
are read beside the measured VM's, and the report's "Every VM's throughput" shows every VM of a
phase with its ops/s and share, named as meta.json's `neighbours.vms` names them."""
import json
import os
import shutil

import pytest

from spinlab_report import reader, report_doc


def _with_neighbours(run_copy, ops):
    """run-basic with neighbours 1..len(ops) in host-load r1 and r2 at these ops/s."""
    nd = run_copy / "snapshots" / "neighbours"
    os.makedirs(nd)
    for rep in (1, 2):
        snap = json.loads((run_copy / "snapshots" / f"host-load-r{rep}.json").read_text())
        for k, x in enumerate(ops, start=1):
            snap["workload"] = {"lockbench": {"ops": int(x * 8), "ops_per_s": x}}
            (nd / f"host-load-r{rep}-n{k}.json").write_text(json.dumps(snap))
    meta = json.loads((run_copy / "meta.json").read_text())
    meta["neighbours"] = {"host_cpus": [0, 1], "overcommit": {"idle-host": 1.0, "host-load": 2.0},
                          "vms": [{"name": "m", "role": "measured"}] +
                                 [{"name": f"m-n{k}", "role": "neighbour"} for k in range(1, len(ops) + 1)]}
    (run_copy / "meta.json").write_text(json.dumps(meta))
    return reader.load_run(str(run_copy))


def test_every_vm_of_a_neighbours_phase_is_shown_with_its_share(run_copy):
    run = _with_neighbours(run_copy, [1000.0, 3000.0])
    assert sorted((n["phase"], n["rep"], n["vm"]) for n in run.neighbours) == [
        ("host-load", 1, 1), ("host-load", 1, 2), ("host-load", 2, 1), ("host-load", 2, 2)]
    rows = report_doc.every_vm_rows(run)
    assert [r[:2] for r in rows] == [["host-load", "m (measured)"], ["host-load", "m-n1"], ["host-load", "m-n2"]]
    own = [w["ops_per_s"] for s in run.snaps("host-load") for w in s.workload.values()]
    measured = sum(own) / len(own)
    total = measured + 1000.0 + 3000.0
    assert rows[1][2] == "1,000.0" and rows[2][2] == "3,000.0"
    assert [r[3] for r in rows] == ["2", "2", "2"]
    assert rows[2][4] == f"{100 * 3000.0 / total:.2f}%"
    shares = sum(float(r[4].rstrip("%")) for r in rows)
    assert shares == pytest.approx(100.0, abs=0.02)  # rounding of three 2-decimal shares


def test_no_neighbours_no_section(run_copy):
    run = reader.load_run(str(run_copy))
    assert run.neighbours == []
    assert report_doc.every_vm_section(run) == []


def test_a_broken_neighbour_file_is_a_problem_not_a_crash(run_copy):
    run = _with_neighbours(run_copy, [1000.0])
    (run_copy / "snapshots" / "neighbours" / "host-load-r2-n1.json").write_text("{not json")
    run = reader.load_run(str(run_copy))
    assert [(n["rep"], n["vm"]) for n in run.neighbours] == [(1, 1)]
    assert any("neighbour" in p for p in run.problems)
