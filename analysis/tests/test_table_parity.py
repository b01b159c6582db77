"""spinlab-report and the guest's spinstat print the same log2 wait table for the same counters.

spinstat formats with kernel-patch/lockstat/log2_table.cc; the host build links the same file
into log2_table_print (`make host`), which this test feeds the counters of every snapshot and
phase of run-basic, plus edge cases, and compares byte for byte with table.wait_table.
"""
import os
import subprocess

import numpy as np
import pytest

from conftest import BASIC
from spinlab_report import aggregate, reader, table
from spinlab_report.aggregate import Totals

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRINT = os.path.join(os.environ.get("SPINLAB_BUILD", os.path.join(ROOT, "build")), "host", "bin", "log2_table_print")


def guest_tables(totals: list, *flags: str) -> list:
    if not os.access(PRINT, os.X_OK):
        pytest.fail(f"{PRINT} is missing: build the host tools first (make host)")
    lines = "".join(" ".join(str(int(x)) for x in [t.acquisitions, t.uncontended, t.overflow, *t.wait]) + "\n"
                    for t in totals)
    p = subprocess.run([PRINT, *flags], input=lines, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\n\n")[:-1]


def snapshot_totals() -> list:
    run = reader.load_run(BASIC)
    per_snap = [aggregate.phase_totals([s]) for s in run.snapshots]
    per_phase = [aggregate.phase_totals(run.snaps(p)) for p in run.phases]
    return per_snap + per_phase


def edge_cases() -> list:
    hist = np.zeros(64, dtype=np.int64)
    huge = hist.copy()
    huge[63] = (1 << 62)  # count * 10000 overflows 64 bits: both sides halve the same way
    one = hist.copy()
    one[0] = 1
    return [Totals(0, 0, 0, hist, hist), Totals(7, 7, 0, hist, hist), Totals(3, 0, 2, one, hist),
            Totals((1 << 62) + 5, 5, 0, huge, hist)]


def test_report_prints_the_guest_table_for_every_snapshot_and_phase():
    totals = snapshot_totals() + edge_cases()
    guest = guest_tables(totals)
    assert len(guest) == len(totals)
    for t, g in zip(totals, guest):
        assert table.wait_table(t) == g + "\n"
    assert guest[0].splitlines()[0].endswith("%  of all acquisitions")


def test_contended_only_counts_print_the_guest_table_that_says_so():
    """A Linux guest's slow-path probe counts contended acquisitions only (snapshot cpus[].
    acquisitions_counted): both sides say so in the header and print no uncontended row."""
    totals = snapshot_totals() + edge_cases()
    for t in totals:
        t.acquisitions -= t.uncontended
        t.uncontended = 0
        t.contended_only = True
    guest = guest_tables(totals, "--contended-only")
    assert len(guest) == len(totals)
    for t, g in zip(totals, guest):
        assert table.wait_table(t) == g + "\n"
    assert guest[0].splitlines()[0].endswith("%  of contended acquisitions only")
    assert not any("uncontended" in g for g in guest)
    csv_text = table.table_csv({"idle-host": totals[0]})
    assert "uncontended" not in csv_text and ",overflow," in csv_text


def test_a_snapshot_whose_cpu_counts_contended_only_makes_its_phase_say_so(tmp_path):
    """The reader takes the word per CPU; one CPU that says contended-only makes the phase's
    totals (and so its table) say so; a name the ABI does not have is a contract error naming it."""
    import json
    import shutil
    run_dir = tmp_path / "run"
    shutil.copytree(BASIC, run_dir)
    snap = sorted((run_dir / "snapshots").glob("*.json"))[0]
    d = json.loads(snap.read_text())
    assert all("acquisitions_counted" not in cpu for cpu in d["cpus"])  # an older result: every
    assert reader.read_snapshot(str(snap)).acquisitions_counted == "every"
    d["cpus"][0]["acquisitions_counted"] = "contended-only"
    snap.write_text(json.dumps(d))
    s = reader.read_snapshot(str(snap))
    assert s.acquisitions_counted == "contended-only" and aggregate.phase_totals([s]).contended_only
    assert "of contended acquisitions only" in table.wait_table(aggregate.phase_totals([s]))
    d["cpus"][0]["acquisitions_counted"] = "some"
    snap.write_text(json.dumps(d))
    with pytest.raises(reader.c.ContractError, match=r"cpus\[0\]: acquisitions_counted is 'some', not one of every, contended-only"):
        reader.read_snapshot(str(snap))


def test_phase_table_is_the_guest_table_under_a_title(basic_report):
    _, paths = basic_report
    text = open(paths["table"]).read()
    run = reader.load_run(BASIC)
    guest = guest_tables([aggregate.phase_totals(run.snaps(p)) for p in run.phases])
    blocks = text.split("\n\n")
    assert [b.split("\n", 1)[1].rstrip("\n") for b in blocks] == [g.rstrip("\n") for g in guest]
    assert blocks[0].startswith("phase idle-host (2 repetitions, all CPUs and lock classes): 200 acquisitions\n")


def test_percent_rounds_like_the_guest():
    assert table.format_percent(1, 3) == "33.33" and table.format_percent(2, 3) == "66.67"
    assert table.format_percent(1, 8) == "12.50" and table.format_percent(5, 0) == "0.00"
