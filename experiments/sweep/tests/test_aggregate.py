"""Aggregation: a row per cell from its summary.json and snapshots; sweep.csv and sweep.html."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from spinlab_sweep import aggregate, layout, sweep_html, workflow  # noqa: E402

RUN_BASIC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "analysis", "tests", "data", "run-basic")

SUMMARY = {"format": 1, "phases": {
    "idle-host": {"status": "ok", "waits_ge_2^20": 4, "share_waits_ge_2^20": 0.25,
                  "lhp": {"share": 0.5}, "throughput": {"mean": 1000.0, "low": 900.0, "high": 1100.0,
                                                        "change_vs_baseline_pct": 0.0}},
    "host-load": {"status": "ok", "waits_ge_2^20": 7, "share_waits_ge_2^20": 0.368421,
                  "lhp": {"share": 0.75}, "throughput": {"mean": 550.0, "low": 400.0, "high": 700.0,
                                                         "change_vs_baseline_pct": -45.0}},
    "freeze-30ms": {"status": "missing"}}}


def make_sweep(tmp):
    root = str(tmp)
    cells = {"lock-tas": {"values": {"vm.lock": "tas"}}, "lock-mcs": {"values": {"vm.lock": "mcs"}}}
    plan = {"format": layout.FORMAT, "name": "t", "axes": [{"key": "vm.lock", "values": ["tas", "mcs"]}],
            "cells": cells}
    os.makedirs(os.path.join(root, "cells"))
    with open(os.path.join(root, "sweep.json"), "w") as f:
        json.dump(plan, f)
    shutil.copytree(RUN_BASIC, layout.cell_dir(root, "lock-tas"))
    with open(os.path.join(layout.cell_dir(root, "lock-tas"), "summary.json"), "w") as f:
        json.dump(SUMMARY, f)
    open(layout.done_marker(root, "lock-tas"), "w").close()
    return root


def test_rows_states_and_figures(tmp_path):
    root = make_sweep(tmp_path)
    plan, rows = aggregate.collect(root)
    tas, mcs = rows
    assert tas["state"] == "complete" and mcs["state"] == "missing" and mcs["phases"] == {}
    assert list(tas["phases"]) == ["idle-host", "host-load"]  # a missing phase is no column
    hl = tas["phases"]["host-load"]
    assert hl["waits_ge_2^20"] == 7 and hl["lhp_share"] == 0.75 and hl["throughput_change_pct"] == -45.0
    # the repetitions' spread comes from run-basic's two host-load snapshots, and brackets the pool
    assert hl["share_min"] is not None and hl["share_min"] <= hl["share_max"]
    assert hl["share_min"] <= 0.368421 <= hl["share_max"]


def test_csv_has_one_row_per_cell_with_phase_columns(tmp_path):
    root = make_sweep(tmp_path)
    plan, rows = aggregate.collect(root)
    path = os.path.join(root, "sweep.csv")
    aggregate.write_csv(path, plan, rows)
    with open(path) as f:
        table = list(csv.DictReader(f))
    assert [r["cell"] for r in table] == ["lock-tas", "lock-mcs"]
    assert table[0]["vm.lock"] == "tas" and table[0]["state"] == "complete"
    assert table[0]["host-load:throughput"] == "550.0" and table[1]["host-load:throughput"] == ""


def test_html_has_the_table_links_and_both_figures(tmp_path):
    root = make_sweep(tmp_path)
    plan, rows = aggregate.collect(root)
    page = open(sweep_html.write(root, plan, rows)).read()
    assert "1 of 2 cells complete" in page
    assert "cells/lock-tas/report.html" in page and "-45.0 %" in page
    assert page.count("data:image/png;base64,") == 2
    assert "<td>()</td>" not in page  # a cell without figures shows empty cells
    assert os.path.getsize(os.path.join(root, "figures", "share_waits_ge_2^20.png")) > 1000


def test_a_sweep_whose_aggregate_exists_still_runs_its_missing_cells(tmp_path):
    """After a failed cell the aggregate is written anyway; the next run must still run that cell."""
    from spinlab_sweep import spec, workflow
    root = str(tmp_path / "sweep-t")
    s = spec.parse("[vm]\ncpus = 2\n[sweep]\nvm.lock = tas, mcs\n", "t")
    tools = {"run": "/bin/true", "report": "/bin/true", "sweep": ["/bin/true"]}
    workflow.write(s, root, workflow.plan(s, root, tools))
    open(layout.done_marker(root, "lock-tas"), "w").close()
    for name in ("sweep.csv", "sweep.html"):
        open(os.path.join(root, name), "w").close()
    cmd = workflow.snakemake_command(root, False, 1, None)
    out = subprocess.run(cmd[:1] + ["-n", "--quiet"] + cmd[1:], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cell" in out.stdout and "aggregate" in out.stdout, out.stdout  # the missing cell, then aggregation
    assert "Nothing to be done" not in out.stdout + out.stderr


def test_the_slurm_status_interval_reaches_snakemake_as_a_rate_it_keeps():
    """Snakemake's Slurm executor turns a rate above one check a second into one every 33 s:
    spinlab-sweep passes its interval as a rate at or below one a second."""
    cmd = workflow.snakemake_command("/tmp/r", True, 2, None, 2.0)
    assert cmd[cmd.index("--max-status-checks-per-second") + 1] == "0.5"
    cmd = workflow.snakemake_command("/tmp/r", True, 2, None)
    assert float(cmd[cmd.index("--max-status-checks-per-second") + 1]) == pytest.approx(1 / 30)
    assert "--max-status-checks-per-second" not in workflow.snakemake_command("/tmp/r", False, 1, None)
