"""The public API (spinlab_report.load): the report's own numbers, as DataFrames."""
import os
import shutil

import numpy as np
import pandas as pd
import pytest

import spinlab_report as s
from spinlab_report import aggregate, attribution, lhp, reader, summary

from conftest import BASIC


@pytest.fixture(scope="module")
def basic():
    return s.load(BASIC)


def test_the_package_exports_load_and_results():
    assert s.load is not None and s.Results is not None
    assert {"NamesFileError", "Results", "load"} <= set(s.__all__)


def test_every_public_name_is_documented_and_is_the_packages_own():
    """What the labs' checkers and the sweep call besides load (analysis/README.md, "For tools"):
    each name exported is in the README's list, and is the object its module defines."""
    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")).read()
    tools = readme[readme.index("### For tools"):]
    for name in s.__all__:
        assert getattr(s, name) is not None
        if name not in ("NamesFileError", "Results", "load"):
            assert f"`{name}" in tools, f"{name} is exported but not in analysis/README.md's list for tools"
    assert s.load_run is reader.load_run and s.long_waits_share is attribution.long_waits_share


def test_every_long_wait_is_a_row_with_the_reports_class(basic):
    run = reader.load_run(BASIC)
    want = []
    for phase in run.phases:
        share = attribution.long_waits_share(run.snaps(phase), run.timeline, run.clock, basic.long_wait_threshold)
        want += [(phase, w["rep"], w["cpu"], w["lock_class"], w["start_tsc"], w["wait_cycles"], w["lhp_class"],
                  w.get("timeline_class"), w["cause"], w["holder_side"], w["holder_source"], w["waiter_side"],
                  w["waiter_source"], w["holders"])
                 for w in share["waits"]]
    # a wait's classes have the rows' names: lock_class, lhp_class, timeline_class, cause
    got = [tuple(x) for x in basic.waits[["phase", "rep", "cpu", "lock_class", "start_tsc", "wait_cycles", "lhp_class",
                                          "timeline_class", "cause", "holder_side", "holder_source", "waiter_side",
                                          "waiter_source", "holders"]].itertuples(index=False)]
    assert len(want) == 8 and got == want
    assert {w[6] for w in want} == {"unknown", "holder-preempted", "neither"}  # the guest's, as written
    assert None not in {w[7] for w in want}  # the timeline covers run-basic whole


def test_without_a_timeline_the_timeline_class_is_none(tmp_path):
    """As the rows leave timeline_class out where the timeline was not measured, the API says None."""
    run_dir = tmp_path / "run"
    shutil.copytree(BASIC, run_dir)
    os.remove(run_dir / "timeline.csv")
    r = s.load(str(run_dir))
    assert len(r.waits) == 8 and r.waits["timeline_class"].isna().all()
    assert set(r.waits["cause"]) == {"unknown"} and set(r.waits["holder_source"]) == {"none", "steal"}
    assert "timeline_class" not in next(iter(attribution.long_waits_share(
        r.run.snaps("host-load"), r.run.timeline, r.run.clock, r.long_wait_threshold)["waits"]))


def test_off_shares_are_the_measured_off_cycles_over_the_wait(basic):
    run = reader.load_run(BASIC)
    rows = [w for p in run.phases
            for w in attribution.long_waits_share(run.snaps(p), run.timeline, run.clock, basic.long_wait_threshold)["waits"]]
    for (_, got), w in zip(basic.waits.iterrows(), rows):
        for side in ("holder", "waiter"):
            rng = w[f"{side}_off_cycles"]
            lo, hi = got[f"{side}_off_min_share"], got[f"{side}_off_max_share"]
            if rng is None:
                assert np.isnan(lo) and np.isnan(hi)
            else:
                assert lo == pytest.approx(rng[0] / w["wait_cycles"], rel=1e-12)
                assert hi == pytest.approx(rng[1] / w["wait_cycles"], rel=1e-12)


def test_the_class_counts_are_the_summarys(basic):
    for phase, p in basic.summary["phases"].items():
        rows = basic.waits[basic.waits["phase"] == phase]
        assert int((rows["holder_side"] == "off").sum()) == p["lhp"]["holder_off"]
        assert int((rows["holder_side"] == "on").sum()) == p["lhp"]["holder_on"]


def test_classes_hold_every_counter_of_every_snapshot(basic):
    run = reader.load_run(BASIC)
    assert len(basic.classes) == sum(len(snap.stats) for snap in run.snapshots)
    for phase in run.phases:
        t = aggregate.phase_totals(run.snaps(phase))
        rows = basic.classes[basic.classes["phase"] == phase]
        assert int(rows["acquisitions"].sum()) == t.acquisitions
        assert np.array_equal(np.sum(np.stack(rows["wait_hist"].to_list()), axis=0), t.wait)
    assert "lhp_holder_preempted_count" in basic.classes.columns


def test_the_verdict_and_the_timeline_are_the_reports(basic):
    run = reader.load_run(BASIC)
    summ = summary.build(run, summary.Options())
    assert basic.summary["phases"] == summ["phases"]
    assert basic.verdict["phases"]["host-load"]["lhp_spin"]["share_of_vcpu_time"]["n"] == 2
    assert isinstance(basic.timeline, pd.DataFrame) and len(basic.timeline) == len(run.timeline)
    assert basic.meta["phases"] == ["idle-host", "host-load"]


def test_a_threshold_selects_the_waits(basic):
    higher = s.load(BASIC, long_wait_threshold=1 << 24)
    assert len(higher.waits) == int((basic.waits["wait_cycles"] >= 1 << 24).sum())
    assert higher.long_wait_threshold == 1 << 24


def test_a_missing_directory_is_a_contract_error(tmp_path):
    with pytest.raises(reader.c.ContractError, match="no such results directory"):
        s.load(str(tmp_path / "nothing"))
