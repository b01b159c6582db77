"""Throughput counts the run's throughput classes whatever the program (issue 39): kmix alone,
counted by kernel classes, was reported as "lockbench ops/s", n = 0."""
import json

from conftest import BASIC

from spinlab_report import reader, report, summary, throughput

KMIX = ["proc_table", "address_space", "pmm", "heap"]


def _as_kmix(run_copy, with_classes=True):
    """run-basic with each snapshot's workload part written as the runner writes kmix alone."""
    for path in sorted((run_copy / "snapshots").glob("*.json")):
        d = json.load(open(path))
        w = d["workload"].pop("lockbench")
        d["workload"]["kmix"] = {"ops": w.get("ops", 0), "ops_per_s": w["ops_per_s"]} | (
            {"classes": KMIX} if with_classes else {})
        json.dump(d, open(path, "w"))


def test_kmix_alone_is_counted_and_named(run_copy, tmp_path):
    base = summary.build(reader.load_run(BASIC), summary.Options())
    _as_kmix(run_copy)
    s = summary.build(reader.load_run(str(run_copy)), summary.Options())
    for phase in ("idle-host", "host-load"):
        t, b = s["phases"][phase]["throughput"], base["phases"][phase]["throughput"]
        assert t["n"] == 2 and b["n"] == 2
        assert t["values"] == b["values"] and t["mean"] == b["mean"]
        assert t["metric"] == "kmix acquisitions/s (proc_table, address_space, pmm, heap)"
    paths = report.generate(reader.load_run(str(run_copy)), str(tmp_path / "out"), summary.Options())
    md = open(paths["md"]).read()
    assert "| phase | kmix acquisitions/s (proc_table, address_space, pmm, heap) (mean) |" in md
    assert "lockbench ops/s" not in md
    assert "*kmix throughput per phase.*" in md and "lockbench throughput" not in md


def test_lockbench_keeps_its_name(run_copy):
    s = summary.build(reader.load_run(BASIC), summary.Options())
    assert s["phases"]["host-load"]["throughput"]["metric"] == "lockbench ops/s"
    for path in sorted((run_copy / "snapshots").glob("*.json")):  # as the runner writes it now
        d = json.load(open(path))
        d["workload"]["lockbench"]["classes"] = ["user"]
        json.dump(d, open(path, "w"))
    s2 = summary.build(reader.load_run(str(run_copy)), summary.Options())
    assert s2["phases"]["host-load"]["throughput"] == s["phases"]["host-load"]["throughput"]


def test_program_without_classes_is_named_by_program(run_copy):
    _as_kmix(run_copy, with_classes=False)
    run = reader.load_run(str(run_copy))
    snaps = run.snaps("host-load")
    assert throughput.run_metric(snaps) == "kmix acquisitions/s"
    assert [throughput.rep_value(x) for x in snaps] == [
        throughput.rep_value(x) for x in reader.load_run(BASIC).snaps("host-load")]


def test_a_workload_the_guest_counts_is_named_by_its_unit(run_copy):
    """A Linux guest's agent counts its workload itself: {hackbench: {ops, ops_per_s, classes: [], unit}}."""
    for path in sorted((run_copy / "snapshots").glob("*.json")):
        d = json.load(open(path))
        w = d["workload"].pop("lockbench")
        d["workload"]["hackbench"] = {"ops": w.get("ops", 0), "ops_per_s": w["ops_per_s"], "classes": [],
                                      "unit": "hackbench runs"}
        json.dump(d, open(path, "w"))
    s = summary.build(reader.load_run(str(run_copy)), summary.Options())
    base = summary.build(reader.load_run(BASIC), summary.Options())
    t = s["phases"]["host-load"]["throughput"]
    assert t["metric"] == "hackbench: hackbench runs/s"
    assert t["values"] == base["phases"]["host-load"]["throughput"]["values"]
