"""CDFs and percentiles from log2 histograms.

Within a bucket the values are assumed log-uniform: the cumulative share rises linearly in
log2(cycles) from the bucket's lower edge 2^k to its upper edge 2^(k+1). That is the straight
line a CDF plotted on a log2 axis draws between bucket edges, so the percentiles reported in
summary.json and the curves in the figures agree. The CDF is over measured waits: overflows
(waits that could not be timed) have no length and are left out, and said so in the report.
"""
import numpy as np

from .buckets import NBUCKETS


def _cumulative(hist) -> tuple[np.ndarray, int]:
    h = np.asarray(hist, dtype=np.float64)
    if h.shape != (NBUCKETS,):
        raise ValueError(f"histogram must have {NBUCKETS} buckets, got shape {h.shape}")
    if (h < 0).any():
        raise ValueError("histogram has a negative count")
    return np.concatenate([[0.0], np.cumsum(h)]), int(h.sum())


def cdf_points(hist) -> tuple[np.ndarray, np.ndarray] | None:
    """CDF vertices (cycles, share) at bucket edges from the first to the last non-empty bucket.

    The first vertex is (2^first, 0), then one vertex per bucket at its upper edge 2^(k+1) with
    the share of values below it. None for an empty histogram.
    """
    cum, n = _cumulative(hist)
    if n == 0:
        return None
    nz = np.flatnonzero(np.asarray(hist))
    first, last = int(nz[0]), int(nz[-1])
    ks = np.arange(first, last + 2)
    return np.exp2(ks.astype(np.float64)), cum[ks] / n


def cdf_at(hist, cycles) -> np.ndarray | None:
    """Interpolated CDF evaluated at `cycles` (array), e.g. to compare repetitions on one grid."""
    cum, n = _cumulative(hist)
    if n == 0:
        return None
    x = np.log2(np.maximum(np.asarray(cycles, dtype=np.float64), 1e-300))
    return np.interp(x, np.arange(NBUCKETS + 1, dtype=np.float64), cum / n)


def percentile(hist, p: float) -> float | None:
    """The p-th percentile (0 < p <= 100) in cycles, log-uniform within its bucket.

    With target t = p/100 * N, the bucket k is the first whose cumulative count reaches t and
    the value is 2^(k + (t - count below k) / count in k). None for an empty histogram.
    """
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    cum, n = _cumulative(hist)
    if n == 0:
        return None
    target = p / 100.0 * n
    k = int(np.searchsorted(cum[1:], target, side="left"))
    in_bucket = cum[k + 1] - cum[k]
    frac = (target - cum[k]) / in_bucket
    return float(2.0 ** (k + frac))


def share_at_or_above(hist, k: int) -> float | None:
    """Share of values >= 2^k; None for an empty histogram."""
    _, n = _cumulative(hist)
    if n == 0:
        return None
    return float(np.asarray(hist)[k:].sum()) / n
