import numpy as np
import pytest

from spinlab_report.cdf import cdf_at, cdf_points, percentile, share_at_or_above


def hist(**buckets):
    h = np.zeros(64, np.int64)
    for k, n in buckets.items():
        h[int(k[1:])] = n
    return h


def test_cdf_points_at_bucket_edges():
    x, y = cdf_points(hist(b9=16, b10=3, b20=1))
    assert x[0] == 2 ** 9 and x[-1] == 2 ** 21 and len(x) == 13
    assert y[0] == 0 and y[1] == pytest.approx(0.8) and y[2] == pytest.approx(0.95) and y[-1] == 1
    assert np.all(np.diff(y) >= 0)
    assert y[x == 2 ** 20][0] == pytest.approx(0.95)  # flat through the empty buckets


def test_cdf_at_interpolates_in_log2():
    h = hist(b9=16, b10=3, b20=1)
    assert cdf_at(h, [2 ** 9.5])[0] == pytest.approx(0.4)  # halfway through bucket 9 in log2
    assert cdf_at(h, [2 ** 8, 2 ** 30]).tolist() == [0.0, 1.0]


def test_percentiles_log_uniform_within_bucket():
    h = hist(b9=16, b10=3, b20=1)
    assert percentile(h, 50) == pytest.approx(2 ** 9.625)
    assert percentile(h, 99) == pytest.approx(2 ** 20.8)
    assert percentile(h, 100) == pytest.approx(2 ** 21)
    assert percentile(hist(b5=1), 50) == pytest.approx(2 ** 5.5)
    # percentile and CDF agree: the CDF at the p-th percentile is p
    for p in (10, 50, 90, 99.9):
        assert cdf_at(h, [percentile(h, p)])[0] == pytest.approx(p / 100)


def test_empty_and_bad_input():
    empty = np.zeros(64, np.int64)
    assert cdf_points(empty) is None and percentile(empty, 50) is None and share_at_or_above(empty, 20) is None
    with pytest.raises(ValueError, match="64 buckets"):
        percentile(np.ones(32), 50)
    with pytest.raises(ValueError, match="percentile"):
        percentile(hist(b1=1), 0)


def test_share_at_or_above():
    assert share_at_or_above(hist(b9=8, b10=4, b22=4, b24=3), 20) == pytest.approx(7 / 19)
