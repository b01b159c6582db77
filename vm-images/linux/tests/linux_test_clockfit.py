"""clockfit: guest TSC -> host TSC with a bound, on synthetic clock points (exact)."""
import random

import pytest

from spinlab_linux import clockfit


def points_for(truth_offset, hosts, before=60, after=140):
    """Clock points taken at host times `hosts`: the host reads `before` cycles ahead of the
    guest's read and `after` cycles behind it; truth_offset(T) = guest - host at host time T."""
    return [(t - before, t + after, t + truth_offset(t)) for t in hosts]


def outside(cmap, truths):
    """The (guest, true host) pairs whose true host time lies outside the mapped bound."""
    bad = []
    for g, t in truths:
        h, b = cmap.to_host(g)
        if abs(h - t) > b:
            bad.append((g, t, h, b))
    return bad


# -- a constant offset

def test_constant_offset_bound_is_half_the_bracket():
    # The guest reads exactly in the middle of each 200-cycle bracket: offset 5,000, bracket
    # [4,900, 5,100], so the bound is 100 everywhere and the mapping exact.
    off = 5_000
    cmap = clockfit.fit([(t - 100, t + 100, t + off) for t in range(10_000, 1_000_000, 100_000)])
    for g in (10_000 + off, 123_456, 500_000, 910_000 + off - 1, 910_000 + off):
        host, bound = cmap.to_host(g)
        assert (host, bound) == (g - off, 100)
    assert cmap.to_host_interval(200_000, 300_000) == (200_000 - off, 300_000 - off, 100, 100)
    rep = cmap.report()
    assert rep["points"] == 10 and rep["bracket_median_cycles"] == 200 and rep["bracket_max_cycles"] == 200
    assert rep["bound_median_cycles"] == 100 and rep["bound_max_cycles"] == 100
    assert rep["offset_slope_ppm"] == 0


def test_constant_offset_with_uneven_reads_contains_the_truth():
    # Where in its bracket the guest read falls changes from point to point, so the midpoints
    # wander by up to 80 cycles: the bound grows by the segment's change, and holds the truth.
    rng = random.Random(7)
    off = -12_345
    hosts = list(range(1_000_000, 20_000_000, 500_000))
    pts = []
    for t in hosts:
        before = rng.randrange(0, 200)
        pts.append((t - before, t + 200 - before, t + off))
    cmap = clockfit.fit(pts)
    truths = [(t + off, t) for t in range(hosts[0], hosts[-1] + 1, 9_973)]
    assert outside(cmap, truths) == []
    assert max(cmap.to_host(g)[1] for g, _ in truths) <= 200 + 100 + 1


# -- a creeping offset (TCG: about -3,000 ppm, in steps)

def stepping_offset(t0, step_every=200_000, step=-600, ramp=2_000):
    """A monotone offset that stands still and then drops `step` cycles over a short ramp every
    `step_every` host cycles (-3,000 ppm on average): the guest TSC never goes backwards."""
    def truth(t):
        k, r = divmod(t - t0, step_every)
        return 1_000_000 + k * step + (step * min(r, ramp)) // ramp
    return truth


def test_creeping_offset_truth_inside_the_bound_at_every_stamp():
    t0 = 5_000_000
    truth = stepping_offset(t0)
    hosts = list(range(t0, t0 + 10_000_000, 330_000))  # points out of step with the steps
    cmap = clockfit.fit(points_for(truth, hosts))
    truths = [(t + truth(t), t) for t in range(hosts[0], hosts[-1] + 1, 997)]
    assert outside(cmap, truths) == []
    # the bound is needed: half the bracket alone misses the truth right after a step
    assert any(abs(cmap.to_host(g)[0] - t) > 100 for g, t in truths)
    rep = cmap.report()
    assert -3_100 < rep["offset_slope_ppm"] < -2_900
    assert rep["bound_max_cycles"] <= 100 + 2 * 600 + 40  # half bracket + the steps in a segment (+ midpoints' play)


def test_a_shifted_truth_lies_outside_the_bound():
    t0 = 5_000_000
    truth = stepping_offset(t0)
    hosts = list(range(t0, t0 + 10_000_000, 330_000))
    cmap = clockfit.fit(points_for(truth, hosts))
    worst = cmap.report()["bound_max_cycles"]
    shifted = [(t + truth(t), t + 2 * int(worst) + 2) for t in range(hosts[0], hosts[-1] + 1, 997)]
    assert len(outside(cmap, shifted)) == len(shifted)


def test_bound_is_tight_for_a_step_right_after_a_point():
    # Point 0 reads offset in [0, 200]; point 1 in [1,000, 1,200]. An offset that sits at the
    # bottom of point 0's bracket and jumps to the top of point 1's just after point 0 is as far
    # from the interpolated midpoints as the bound says, and no farther.
    cmap = clockfit.fit([(1_000, 1_200, 1_200), (1_000_000, 1_000_200, 1_001_200)])
    g = 1_201  # one cycle after point 0's guest stamp; the true offset is already 1,200
    host, bound = cmap.to_host(g)
    true_host = g - 1_200
    assert abs(host - true_host) <= bound <= abs(host - true_host) + 1
    assert bound == pytest.approx(1_200 - 100, abs=1)


def test_an_offset_going_back_and_forth_inside_a_segment_is_not_covered():
    # The docstring's limit: both points see offset 0 +- 100, but between them the offset went
    # up by 5,000 and back. No point saw it, so the bound (100) cannot hold it.
    cmap = clockfit.fit([(0, 200, 100), (1_000_000, 1_000_200, 1_000_100)])
    g = 500_100
    host, bound = cmap.to_host(g)
    assert bound == 100
    assert abs(host - (g - 5_000)) > bound


def test_rounding_stays_inside_the_bound():
    # Point 0's bracket is [7, 10] (host 0-3, guest 10): midpoint 8.5, so guest 10 maps to host
    # 1.5, rounded to 2, and the bound 1.5 grows by the rounding to 2: [0, 4] holds [0, 3].
    cmap = clockfit.fit([(0, 3, 10), (100, 103, 111)])
    assert cmap.to_host(10) == (2, 2)
    for g in range(10, 112):
        host, bound = cmap.to_host(g)
        # every host time the points allow for g is inside: at a point, its own bracket's;
        # between them, the offset anywhere within both brackets ([7, 10] and [8, 11])
        lo_off, hi_off = {10: (7, 10), 111: (8, 11)}.get(g, (7, 11))
        low, high = g - hi_off, g - lo_off
        assert host - bound <= low and high <= host + bound


# -- outside the points, and bad points

def test_outside_the_points_is_refused_with_the_range():
    cmap = clockfit.fit([(1_000, 1_100, 2_000), (5_000, 5_100, 6_000)])
    assert cmap.covers(2_000) and cmap.covers(6_000) and not cmap.covers(1_999)
    with pytest.raises(ValueError, match=r"guest TSC 1999 is outside the clock points' span \[2000, 6000\]"):
        cmap.to_host(1_999)
    with pytest.raises(ValueError, match=r"guest TSC 6001 is outside"):
        cmap.to_host_interval(3_000, 6_001)
    with pytest.raises(ValueError, match="ends at 3000, before its start 4000"):
        cmap.to_host_interval(4_000, 3_000)


GOOD = [(100, 200, 1_150), (1_000, 1_100, 2_050), (2_000, 2_100, 3_050)]


@pytest.mark.parametrize("points, message", [
    ([], "at least 2 points, it was given 0"),
    (GOOD[:1], "at least 2 points, it was given 1"),
    ([GOOD[0], (1_100, 1_000, 2_050), GOOD[2]], "clock point 1: host_after 1000 is before host_before 1100"),
    ([GOOD[0], GOOD[1], (1_050, 2_100, 3_050)],
     "clock point 2: host_before 1050 is before point 1's host_after 1100"),
    ([GOOD[0], GOOD[1], (2_000, 2_100, 2_000)],
     "clock point 2: guest TSC 2000 is not after point 1's 2050; the guest's TSC went backwards"),
    ([GOOD[0], GOOD[1], (2_000, 2_100, 2_050)], "clock point 2: guest TSC 2050 is not after point 1's 2050"),
    ([GOOD[0], (1_000, 1_100, -5)], "clock point 1's guest TSC is -5, a negative TSC value"),
    ([GOOD[0], (1_000.0, 1_100, 2_050)], "clock point 1's host_before is 1000.0, not an integer"),
    ([GOOD[0], (1_000, 1_100)], r"clock point 1 is \(1000, 1100\), not \(host_before, host_after, guest\)"),
])
def test_bad_points_are_named(points, message):
    with pytest.raises(ValueError, match=message):
        clockfit.fit(points)


def test_slope_of_a_linear_creep():
    # midpoints fall 3,000 cycles per 1,000,000 guest cycles: -3,000 ppm, and a linear creep
    # is interpolated exactly (bound = half bracket + the change across the segment).
    pts = [(g - (1_000 - 3_000 * i) - 50, g - (1_000 - 3_000 * i) + 50, g)
           for i, g in enumerate(range(10_000_000, 20_000_001, 1_000_000))]
    cmap = clockfit.fit(pts)
    rep = cmap.report()
    assert rep["offset_slope_ppm"] == -3_000
    assert rep["bound_max_cycles"] == 50 + 3_000
    assert rep["guest_span"] == [10_000_000, 20_000_000]
    g = 12_345_678
    assert cmap.to_host(g)[0] == round(g - (1_000 - 3_000 * (g - 10_000_000) / 1_000_000))
