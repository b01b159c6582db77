"""clock_check: the brackets' hard side, the lateness they prove, and a stated offset against them."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from spinlab_report import clock_check  # noqa: E402


def clock(points, floor=0.0):
    return {"noise_floor_cycles": floor, "points": points}


def test_brackets_that_admit_one_offset_are_consistent():
    # Offsets 1000 +- 100 and 1050 +- 100: any offset in [950, 1100] fits both.
    c = clock([[10, 1000, 150.0], [20, 1050, 150.0]], floor=50.0)
    r = clock_check.constant_offset_check(c, stated_offset=1000)
    assert r["upper_cycles"] == 1100 and r["lower_cycles"] == 950
    assert r["late_cycles"] == 0 and r["consistent"] and r["stated_ok"]


def test_disjoint_brackets_prove_lateness_and_refute_a_larger_offset():
    # As measured under nested KVM: one publication seen within 106,294 cycles of its TSC, another
    # not before 128,274: publications were late by at least the difference.
    c = clock([[10, 106000, 70452.5 + 294], [20, 139000, 70452.5 + 10726]], floor=70452.5)
    r = clock_check.constant_offset_check(c, stated_offset=0)
    assert r["upper_cycles"] == 106294.0
    assert r["lower_cycles"] == 128274.0
    assert r["late_cycles"] == 21980.0 and not r["consistent"]
    assert r["stated_ok"]  # KVM's 0 is allowed by causality
    assert not clock_check.constant_offset_check(c, stated_offset=106295)["stated_ok"]


def test_no_points_is_no_check_and_bad_points_are_named():
    assert clock_check.constant_offset_check(clock([])) is None
    with pytest.raises(ValueError, match=r"points\[1\]"):
        clock_check.brackets(clock([[1, 2, 3.0], [1, 2]]))
    with pytest.raises(ValueError, match="below noise_floor_cycles"):
        clock_check.brackets(clock([[1, 2, 3.0]], floor=5.0))
