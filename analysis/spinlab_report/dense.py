"""Helpers for figures that may hold millions of marks (64 vCPUs, 1M long waits): thinning to at
most one mark per pixel. (The long waits they draw are the run's Attribution, attribution.py,
measured once before the figures and handed to them.)

- `one_per_cell(*coords)`: the indices of the first mark in each cell of a pixel grid, so a figure
  never draws more marks than it has pixels; a mark hidden under another of the same series in
  the same pixel changes nothing that can be seen.
- DENSE: the number of marks above which a figure thins and rasterizes its marks (the SVG then
  embeds them as an image instead of one element per mark).
"""
import numpy as np

DENSE = 5000


def one_per_cell(*cells) -> np.ndarray:
    """Sorted indices of the first mark in each distinct cell; cells: one integer array per axis
    (pixel column, row, ...), all the same length."""
    if not cells or not len(cells[0]):
        return np.zeros(0, dtype=np.int64)
    key = np.stack([np.asarray(c, dtype=np.int64) for c in cells], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return np.sort(first)


def pixel(values, lo: float, hi: float, pixels: int) -> np.ndarray:
    """The pixel (0 .. pixels-1) of each value on an axis from lo to hi (values outside: clipped)."""
    v = (np.asarray(values, dtype=np.float64) - lo) / ((hi - lo) or 1.0) * pixels
    return np.clip(np.floor(v), 0, pixels - 1).astype(np.int64)


def column_runs(col, lo, hi) -> tuple:
    """Vertical bars (pixel column, first row, last row; rows inclusive) merged per column into
    the runs of rows they cover: (columns, first rows, last rows) of the runs, one segment per
    run instead of one per bar, covering the same pixels."""
    col, lo, hi = (np.asarray(v, dtype=np.int64) for v in (col, lo, hi))
    if not col.size:
        return col, lo, hi
    order = np.lexsort((lo, col))
    col, lo, hi = col[order], lo[order], hi[order]
    big = int(max(hi.max(), lo.max())) + 2  # columns sorted: col * big + row grows from column to column
    reach = np.maximum.accumulate(col * big + hi) - col * big  # the lowest row reached so far in the column
    new = np.ones(col.size, dtype=bool)
    new[1:] = (col[1:] != col[:-1]) | (lo[1:] > reach[:-1] + 1)
    first = np.flatnonzero(new)
    return col[first], lo[first], np.maximum.reduceat(hi, first)
