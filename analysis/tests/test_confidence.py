import pytest

from spinlab_report.confidence import mean_ci, t_quantile
from spinlab_report.throughput import pct_change

# Student t two-sided 95% and 99% critical values from printed tables.
TABLE = {1: (12.706, 63.657), 2: (4.303, 9.925), 3: (3.182, 5.841), 4: (2.776, 4.604),
         9: (2.262, 3.250), 29: (2.045, 2.756), 120: (1.980, 2.617)}


@pytest.mark.parametrize("df", sorted(TABLE))
def test_t_quantile_matches_tables(df):
    assert t_quantile(0.975, df) == pytest.approx(TABLE[df][0], abs=1e-3)
    assert t_quantile(0.995, df) == pytest.approx(TABLE[df][1], abs=1e-3)


def test_t_quantile_median_and_bad_input():
    assert t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_quantile(0.975, 0)


def test_mean_ci_known_answer():
    ci = mean_ci([1000.0, 1100.0])  # s = 70.71, half = 12.706 * 70.71 / sqrt(2) = 635.3
    assert ci["mean"] == 1050.0 and ci["n"] == 2
    assert ci["low"] == pytest.approx(1050 - 635.31, abs=0.01) and ci["high"] == pytest.approx(1685.31, abs=0.01)
    ci = mean_ci([10, 12, 14], confidence=0.95)  # s = 2, half = 4.303 * 2 / sqrt(3) = 4.968
    assert (ci["low"], ci["high"]) == (pytest.approx(7.032, abs=1e-3), pytest.approx(16.968, abs=1e-3))


def test_mean_ci_too_few_values():
    assert mean_ci([5.0])["low"] is None and mean_ci([5.0])["mean"] == 5.0
    assert mean_ci([])["mean"] is None
    with pytest.raises(ValueError, match="confidence"):
        mean_ci([1, 2], confidence=1.5)


def test_pct_change():
    assert pct_change(550, 1050) == pytest.approx(-47.619, abs=1e-3)
    assert pct_change(1, 0) is None and pct_change(None, 3) is None


def test_log_ratio_is_welch_on_logs():
    import math
    from scipy import stats
    from spinlab_report.confidence import log_ratio
    a, b = [4.5, 3.5, 4.5, 3.5], [1.5, 0.5, 1.5, 0.5]
    r = log_ratio(a, b)
    ref = stats.ttest_ind([math.log(x) for x in a], [math.log(x) for x in b], equal_var=False)
    assert r["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert r["ratio"] == pytest.approx(math.sqrt(4.5 * 3.5 / 0.75))
    assert r["low"] < r["ratio"] < r["high"]
