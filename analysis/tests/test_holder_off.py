"""The holder-off scatter's fractions (fig_holder_off): measured from run-basic's timeline, or
taken from the attribution's per-wait holder_off_cycles range when it is there."""
import pytest


def test_holder_off_fraction_is_the_measured_overlap():
    """run-basic host-load r1: the 4.5M wait is [3300.001M, 3304.501M) in host TSC and its holder,
    vCPU 1, is off [3302M, 3310M): 2.501M of the wait (see tests/data/README.md)."""
    from conftest import BASIC
    from spinlab_report import attribution, fig_holder_off, reader
    run = reader.load_run(BASIC)
    pts, missing, given = fig_holder_off.points(run, attribution.attribute_run(run, 1 << 20))
    by_len = dict(zip(pts["wait"].tolist(), pts["fraction"].tolist()))
    assert by_len[4_500_000] == pytest.approx(2_501_000 / 4_500_000)
    # the 5M wait: vCPU 1 off for all of it (+-20 cycles of clock bound); the 17M one: none
    assert by_len[5_000_000] == pytest.approx(1.0, abs=1e-5) and by_len[17_000_000] == 0.0
    # 7M wait of r2, holder vCPU 0 frozen [7101M, 7106M): 5M of 7M
    assert by_len[7_000_000] == pytest.approx(5 / 7)
    # the 30M wait runs past the timeline's end: no fraction; the seven the timeline covers
    # (idle-host's one and six of host-load) come with the attribution's range, steal time's
    # classes included
    assert 30_000_000 not in by_len and missing == 1 and given == 7


def test_holder_off_fraction_prefers_the_attributions_range():
    from spinlab_report.fig_holder_off import attributed_fraction
    w = {"wait_cycles": 1000, "holder_off_cycles": [400, 800]}
    assert attributed_fraction(w) == (pytest.approx(0.6), 0.4, 0.8)
    assert attributed_fraction({"wait_cycles": 1000, "holder_off_cycles": [900, 1200]})[2] == 1.0
    assert attributed_fraction({"wait_cycles": 1000}) is None
