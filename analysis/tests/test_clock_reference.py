"""clock.json's reference (the guest's HPET, collector/clock_reference.h): read and checked by the
reader, carried into summary.json's clock, and said in the report's clock paragraph; a bad one is
a contract error naming the field; results from before it have none and say nothing of it."""
import json

import pytest

from spinlab_report import contract, reader, report, summary

REFERENCE = {"source": "hpet", "readings": 6443, "placed": 6441, "calibrated_from": 120,
             "calibration_bound_ns": 233.08, "why_not": ""}


def _with_reference(run_copy, ref):
    path = run_copy / "clock.json"
    d = json.load(open(path))
    d["reference"] = ref
    d["sampler_spun_ms"] = 1076.8
    json.dump(d, open(path, "w"))


def test_the_reference_is_read_summarised_and_said(run_copy, tmp_path):
    _with_reference(run_copy, REFERENCE)
    run = reader.load_run(str(run_copy))
    assert run.clock["reference"] == REFERENCE
    s = summary.build(run, summary.Options())
    assert s["clock"]["reference"] == REFERENCE
    md = open(report.generate(run, str(tmp_path / "out"), summary.Options())["md"]).read()
    assert ("6441 of its points are publications placed through the guest's hpet (calibrated against 120 "
            "publications the host saw, to within 233 ns), the rest publications the host saw.") in md


def test_a_reference_that_could_not_be_calibrated_says_why(run_copy, tmp_path):
    _with_reference(run_copy, dict(REFERENCE, placed=0, calibrated_from=0, calibration_bound_ns=None,
                                   why_not="fewer than 2 bracketed publications with a reference"))
    run = reader.load_run(str(run_copy))
    md = open(report.generate(run, str(tmp_path / "out"), summary.Options())["md"]).read()
    assert ("The guest's 6443 publications read with its hpet were not placed: fewer than 2 bracketed "
            "publications with a reference.") in md


def test_results_from_before_the_reference_say_nothing_of_it(run_copy, tmp_path):
    run = reader.load_run(str(run_copy))
    assert run.clock["reference"] is None
    assert summary.build(run, summary.Options())["clock"]["reference"] is None
    md = open(report.generate(run, str(tmp_path / "out"), summary.Options())["md"]).read()
    assert "publications placed through" not in md and "Clock: the sampled fit" not in md


@pytest.mark.parametrize("ref, named", [
    ([1, 2], "clock.json reference: expected an object"),
    (dict(REFERENCE, readings=-1), "field 'readings' must be >= 0"),
    (dict(REFERENCE, placed="many"), "field 'placed' must be int"),
    ({k: v for k, v in REFERENCE.items() if k != "source"}, "field 'source' is missing"),
    (dict(REFERENCE, calibration_bound_ns=-3.0), "calibration_bound_ns must be a number of ns or null"),
])
def test_a_bad_reference_is_named(run_copy, ref, named):
    _with_reference(run_copy, ref)
    run = reader.load_run(str(run_copy))  # the clock is optional: the run loads, the problem is said
    assert run.clock is None
    assert any(named in p for p in run.problems), run.problems
