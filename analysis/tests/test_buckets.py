import numpy as np
import pytest

from spinlab_report.buckets import (NBUCKETS, bucket_edges, bucket_label, bucket_of, count_at_or_above,
                                    invariant_error, merge, nonempty_range)


@pytest.mark.parametrize("k", range(1, NBUCKETS))
def test_every_power_of_two_edge(k):
    assert bucket_of(2 ** k) == k
    assert bucket_of(2 ** k - 1) == k - 1
    assert bucket_of(2 ** (k + 1) - 1) == k


def test_original_experiment_examples_and_zero():
    # The original WRK experiment's slots 8 and 9: 128..255 and 256..511 cycles.
    assert bucket_of(128) == 7 and bucket_of(255) == 7 and bucket_of(256) == 8
    assert bucket_of(0) == 0 and bucket_of(1) == 0
    with pytest.raises(ValueError, match="cycles must be >= 0"):
        bucket_of(-1)


def test_edges_are_half_open_and_contiguous():
    assert bucket_edges(0) == (0, 2)
    assert bucket_edges(9) == (512, 1024)
    for k in range(1, NBUCKETS):
        assert bucket_edges(k)[0] == bucket_edges(k - 1)[1]
    with pytest.raises(ValueError, match="0..63"):
        bucket_edges(64)


def test_labels_align_like_the_original_table():
    assert bucket_label(6) == "2^6" and bucket_label(10) == "2^10"


def test_merge_range_and_tail():
    a, b = np.zeros(64, np.int64), np.zeros(64, np.int64)
    a[9], b[9], b[22] = 3, 2, 1
    m = merge([a, b])
    assert m[9] == 5 and m[22] == 1 and m.sum() == 6
    assert nonempty_range(m) == (9, 22)
    assert nonempty_range(np.zeros(64)) is None
    assert count_at_or_above(m, 20) == 1 and count_at_or_above(m, 9) == 6


def test_invariant():
    h = np.zeros(64, np.int64)
    h[9] = 4
    assert invariant_error(10, 5, 1, h) is None
    msg = invariant_error(11, 5, 1, h)
    assert "= 10" in msg and "acquisitions = 11" in msg
