"""Log2 wait/hold buckets by most significant bit (x86's `bsr`): bucket k holds [2^k, 2^(k+1)).

The kernel stores 64 buckets per histogram (one per bit of a 64-bit TSC difference). A value of
0 cycles has no most significant bit; the kernel counts it in bucket 0, so bucket 0 is really
[0, 2). Everything here is pure and works on numpy int64 arrays of length NBUCKETS.
"""
import numpy as np

NBUCKETS = 64
# The fixed long-wait row of summary.json and the verdict: waits >= 2^20 cycles (about 0.4 ms at
# 2.4 GHz), whatever the LHP threshold the user chose.
LONG_K = 20


def bucket_of(cycles: int) -> int:
    """Index of the most significant bit of `cycles` (x86's `bsr`); 0 and 1 go to bucket 0."""
    if cycles < 0:
        raise ValueError(f"cycles must be >= 0, got {cycles}")
    return max(int(cycles).bit_length() - 1, 0)


def bucket_edges(k: int) -> tuple[int, int]:
    """Half-open cycle range [lo, hi) counted by bucket k."""
    if not 0 <= k < NBUCKETS:
        raise ValueError(f"bucket index must be in 0..{NBUCKETS - 1}, got {k}")
    return (0 if k == 0 else 1 << k), 1 << (k + 1)


def bucket_label(k: int) -> str:
    """The table's row label, `2^9`, `2^10`, as the guest's formatter writes it."""
    return f"2^{k}"


def empty() -> np.ndarray:
    return np.zeros(NBUCKETS, dtype=np.int64)


def merge(hists) -> np.ndarray:
    """Sum histograms (CPUs, lock classes or repetitions): bucket counts simply add."""
    total = empty()
    for h in hists:
        total += np.asarray(h, dtype=np.int64)
    return total


def nonempty_range(hist) -> tuple[int, int] | None:
    """(first, last) non-empty bucket indexes, or None when the histogram is empty."""
    nz = np.flatnonzero(np.asarray(hist))
    if nz.size == 0:
        return None
    return int(nz[0]), int(nz[-1])


def count_at_or_above(hist, k: int) -> int:
    """Number of values >= 2^k (exact, because 2^k is a bucket edge)."""
    return int(np.asarray(hist)[k:].sum())


def invariant_error(acquisitions: int, uncontended: int, overflow: int, wait_hist) -> str | None:
    """The measurement invariant uncontended + sum(wait buckets) + overflow == acquisitions.

    Returns None when it holds, else a sentence with the numbers, for the report.
    """
    waits = int(np.asarray(wait_hist).sum())
    got = uncontended + waits + overflow
    if got == acquisitions:
        return None
    return (f"uncontended {uncontended} + waits {waits} + overflow {overflow} = {got}, "
            f"but acquisitions = {acquisitions}")
