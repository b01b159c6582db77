"""The original WRK experiment's table (spinlab_report/wrk_table.py) for timing=all runs.

Golden numbers: the original experiment's own counts (2^7: 135, 2^8: 67,749, 2^9: 1,200, 2^10: 3,
2^11: 1) give its rows and percentages, worked out by hand below. The original printed 00.19 for
135 of 69,088, which is 0.1954 %: no single rounding rule gives both that and its 01.74 for 1,200
(1.7369 %), so spinlab rounds half up everywhere (00.20), as its log2 wait table does.
The guest side: the runner prints the same table through kernel-patch/lockstat/log2_table.cc's
format_wrk_table, which build/host/bin/log2_table_print --wrk runs here (parity, byte for byte).
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BASIC
from spinlab_report import aggregate, figures, reader, plotting, report, summary, wrk_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRINT = os.path.join(os.environ.get("SPINLAB_BUILD", os.path.join(ROOT, "build")), "host", "bin", "log2_table_print")

ORIGINAL = {7: 135, 8: 67749, 9: 1200, 10: 3, 11: 1}  # the original experiment's counts, total 69,088
ORIGINAL_TABLE = (
    "cycles       count       %\n"
    "2^ 6             0\n"          # one empty row before the first count, as the original shows 2^6
    "2^ 7           135   00.20\n"  # 135 / 69088 = 0.1954 %
    "2^ 8         67749   98.06\n"  # 98.0619 %
    "2^ 9          1200   01.74\n"  # 1.7369 %
    "2^10             3\n"          # 0.0043 %: rounds to 0.00, left blank as in the original
    "2^11             1\n"
    "2^12             0\n")


def hist(counts: dict) -> np.ndarray:
    h = np.zeros(64, dtype=np.int64)
    for k, n in counts.items():
        h[k] = n
    return h


def test_the_original_experiments_counts_give_its_table():
    assert wrk_table.wrk_table(hist(ORIGINAL), 0) == ORIGINAL_TABLE
    assert wrk_table.peak(hist(ORIGINAL)) == 8


def test_overflow_row_edges_and_full_share():
    # Overflow counts in the total and gets a row; 2^0 has no row below it, 2^63 none above.
    assert wrk_table.wrk_table(hist({0: 1, 63: 1}), 2) == (
        "cycles       count       %\n"
        "2^ 0             1   25.00\n"
        "2^ 1             0\n"
        + "".join(f"2^{k:>2}             0\n" for k in range(2, 62))
        + "2^62             0\n"
        "2^63             1   25.00\n"
        "overflow         2   50.00\n")
    assert wrk_table.wrk_table(hist({8: 5}), 0).splitlines()[2] == "2^ 8             5  100.00"
    assert wrk_table.wrk_table(hist({}), 0) == "cycles       count       %\n"
    assert wrk_table.peak(hist({})) is None
    assert wrk_table.peak(hist({9: 4, 8: 4})) == 8  # a tie goes to the shorter bucket


def test_bad_histogram_is_refused_naming_the_length():
    with pytest.raises(ValueError, match="64 buckets, got 3"):
        wrk_table.wrk_table([1, 2, 3], 0)


def test_timing_all_is_read_from_the_kernel_command_line():
    meta = reader.Meta.from_json
    assert wrk_table.timing_all(meta({"kernel_append": "lock=tas clock=cpuid timing=all init=/bin/kmix"}))
    assert not wrk_table.timing_all(meta({"kernel_append": "lock=tas clock=cpuid init=/bin/x timing=allx"}))
    assert not wrk_table.timing_all(meta({}))
    with pytest.raises(ValueError, match="kernel_append must be a string"):
        wrk_table.timing_all(meta({"kernel_append": 3}))


def guest_wrk_tables(rows: list) -> list:
    if not os.access(PRINT, os.X_OK):
        pytest.fail(f"{PRINT} is missing: build the host tools first (make host)")
    lines = "".join(" ".join(str(int(x)) for x in [0, 0, ov, *h]) + "\n" for h, ov in rows)
    p = subprocess.run([PRINT, "--wrk"], input=lines, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\n\n")[:-1]


def test_the_runner_prints_the_same_table_as_the_report():
    run = reader.load_run(BASIC)
    rows = [(aggregate.phase_totals([s]).wait, aggregate.phase_totals([s]).overflow) for s in run.snapshots]
    rows += [(hist(ORIGINAL), 0), (hist({0: 1, 63: 1}), 2), (hist({}), 0), (hist({8: 5}), 0),
             (hist({5: (1 << 62)}), 7)]  # count * 10000 overflows 64 bits: both sides halve alike
    guest = guest_wrk_tables(rows)
    assert len(guest) == len(rows)
    for (h, ov), g in zip(rows, guest):
        assert wrk_table.wrk_table(h, ov) == g + "\n"


def no_figures(run, att, counters, summ, figdir, opts) -> dict:
    """figures.draw without drawing (this test is about the table, drawing takes ~10 s)."""
    names = ("wait_ccdf", "wait_cdf", "wait_cdf_phases", "wait_hist", "hold_cdf", "class_waits", "cpu_heatmap",
             "holder_off_scatter", "long_wait_window", "throughput")
    return {n: plotting.Figure(n, n, missing="not drawn in this test") for n in names}


def test_a_timing_all_run_gets_the_section_with_its_peak(tmp_path, monkeypatch):
    """Run level: run-basic's counters as a timing=all run's (every acquisition timed, none
    uncontended) give the section, and its phases' peaks are where the counts say."""
    monkeypatch.setattr(figures, "draw", no_figures)
    run_dir = tmp_path / "run"
    shutil.copytree(BASIC, run_dir)
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["kernel_append"] = "lock=tas clock=cpuid pause=on timing=all init=/bin/kmix"
    (run_dir / "meta.json").write_text(json.dumps(meta))
    run = reader.load_run(str(run_dir))
    paths = report.generate(run, str(tmp_path / "out"), summary.Options())
    text = open(paths["wrk_table"]).read()
    idle = aggregate.phase_totals(run.snaps("idle-host"))
    k = wrk_table.peak(idle.wait)
    assert f"phase idle-host (2 repetitions, all CPUs and lock classes): {int(idle.wait.sum()) + idle.overflow} " \
           f"timed acquisitions; peak 2^{k} with" in text
    assert wrk_table.wrk_table(idle.wait, idle.overflow) in text
    md = open(paths["md"]).read()
    assert "## The original experiment's table (timing=all)" in md


def test_other_runs_get_no_section(basic_report):
    out, paths = basic_report
    assert "wrk_table" not in paths
    assert "timing=all" not in open(paths["md"]).read()
