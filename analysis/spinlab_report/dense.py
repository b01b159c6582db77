"""Helpers for figures that may hold millions of marks (64 vCPUs, 1M long waits): one attribution
per phase shared by the figures, and thinning to at most one mark per pixel.

- `long_waits(run, phase, threshold)`: waits.long_waits_share(...)["waits"] of a phase, computed once
  per run, phase and threshold and reused by every figure that draws long waits (the attribution
  measures each wait against the timeline; doing it once per figure multiplied the report's cost).
- `one_per_cell(*coords)`: the indices of the first mark in each cell of a pixel grid, so a figure
  never draws more marks than it has pixels; a mark hidden under another of the same series in
  the same pixel changes nothing that can be seen.
- DENSE: the number of marks above which a figure thins and rasterizes its marks (the SVG then
  embeds them as an image instead of one element per mark).
"""
import numpy as np

from . import waits

DENSE = 5000

_cache = {"run": None, "waits": {}}  # the last run's attributions only: memory stays bounded


def long_waits(run, phase: str, threshold: int) -> list:
    """The attributed long waits of one phase (waits.long_waits_share), computed once per run."""
    if _cache["run"] is not run:
        _cache["run"], _cache["waits"] = run, {}
    key = (phase, threshold)
    if key not in _cache["waits"]:
        _cache["waits"][key] = waits.long_waits_share(run.snaps(phase), run.timeline, run.clock, threshold)["waits"]
    return _cache["waits"][key]


def release(run=None):
    """Drops the cached attributions (about 1 KB per wait), here and those lhp keeps on the
    snapshots of `run` (or of the last run cached); a later long_waits() recomputes them. The Trace
    section calls it: the report draws it after every figure that uses the cache."""
    run = run if run is not None else _cache["run"]
    if run is not None:
        waits.forget(run.snapshots)
    _cache["run"], _cache["waits"] = None, {}


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
