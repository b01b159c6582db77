"""Guest TSC -> host TSC, with a bound that contains the truth (pure: no I/O).

The input is clock points from a ping-pong with the guest: the host reads its TSC
(`host_before`), asks the guest, the guest reads its TSC (`guest`), the host reads its TSC again
(`host_after`). The guest's read happened at some host time in [host_before, host_after], so the
offset `guest - host` at that guest time lies in the point's bracket

    [lo, hi] = [guest - host_after, guest - host_before],     midpoint m, half width w = (hi - lo) / 2.

Under TCG the guest TSC is the host TSC less the time the VM was stopped, and QEMU moves that
offset as it runs (about -3,000 ppm was seen on one host, in steps); under KVM it is the host TSC
plus a constant offset. Nothing here assumes either: the fit only interpolates between points.

The rule (`fit`, `ClockMap.to_host`):

- At a point's own guest stamp x_i: host = x_i - m_i, bound = w_i (the truth is in the bracket).
- Between neighbouring points i and i+1 (x_i < g < x_{i+1}): the offset is interpolated linearly
  between the two midpoints, m(g) = m_i + (m_{i+1} - m_i) (g - x_i) / (x_{i+1} - x_i), and
  host = g - m(g). With L = min(lo_i, lo_{i+1}) and U = max(hi_i, hi_{i+1}) the bound is

      bound(g) = max(U - m(g), m(g) - L)

  which is at most max(w_i, w_{i+1}) + |m_{i+1} - m_i| (the segment's half the larger bracket
  plus the offset's change across it), and equal to it at the segment's worse end.
- The guarantee: for ANY true offset path o(g) that lies in each point's bracket at that point's
  guest stamp and moves monotonically (never back and forth) between neighbouring points, the
  true host time g - o(g) of every guest stamp g between the first and the last point lies
  within +-bound(g) of the host time returned. Proof: monotone between x_i and x_{i+1}, o(g)
  lies between o(x_i) and o(x_{i+1}), both in [L, U], so |o(g) - m(g)| <= max(U - m, m - L).
  The bound is tight: a step from the bottom of one bracket to the top of the next right after
  x_i reaches it. NOT covered: an offset that jumps back and forth inside one segment (e.g. up
  then down again between two points), which no point saw; more points close that gap.
- Before the first point and after the last: refused. `to_host` raises ValueError naming the
  stamp and the covered range; `covers(g)` says beforehand. The offset outside the points is
  unconstrained by any measurement, so no bound can be stated there; take points before the
  first and after the last stamp to be mapped.
- Arithmetic is exact (integers and fractions): the host time returned is rounded to the nearest
  cycle and the bound is rounded up, the rounding included in it, so containment survives.

Points are checked (ValueError naming the point's index): fewer than 2 points, a value that is
not a non-negative integer, host_after < host_before, a point's host_before before the previous
point's host_after (the exchanges are sequential: each begins after the previous one ended),
and a guest stamp not after the previous point's (the guest's TSC went backwards or stood still).

The offset's overall slope is reported in ppm of guest time, (m_last - m_first) / (x_last -
x_first) * 1e6: negative when the guest's TSC runs slower than the host's.
"""
from bisect import bisect_right
from fractions import Fraction
from math import ceil, floor
from numbers import Integral
from statistics import median
from typing import NamedTuple, Sequence


class ClockPoint(NamedTuple):
    host_before: int
    host_after: int
    guest: int


class HostInterval(NamedTuple):
    """A guest interval mapped to host TSC: each end with its own bound (host cycles)."""
    start: int
    end: int
    start_bound: int
    end_bound: int


def _count(value, what):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{what} is {value!r}, not an integer number of TSC cycles")
    if value < 0:
        raise ValueError(f"{what} is {value}, a negative TSC value")
    return int(value)


def _round_half_up(x: Fraction) -> int:
    return floor(x + Fraction(1, 2))


class ClockMap:
    """The fitted map; build it with `fit(points)`. Read-only."""

    def __init__(self, points: Sequence[ClockPoint]):
        self.points = tuple(points)
        self._x = [p.guest for p in self.points]
        self._lo = [p.guest - p.host_after for p in self.points]
        self._hi = [p.guest - p.host_before for p in self.points]
        self._mid = [Fraction(lo + hi, 2) for lo, hi in zip(self._lo, self._hi)]

    # -- the guest span the points cover
    @property
    def first_guest(self) -> int:
        return self._x[0]

    @property
    def last_guest(self) -> int:
        return self._x[-1]

    def covers(self, guest_tsc: int) -> bool:
        """Whether guest_tsc lies between the first and the last point (both included)."""
        return self._x[0] <= guest_tsc <= self._x[-1]

    def _exact(self, g: int) -> tuple[Fraction, Fraction]:
        """(offset estimate, bound) at guest stamp g, exact; g must be covered."""
        if not self.covers(g):
            raise ValueError(f"guest TSC {g} is outside the clock points' span "
                             f"[{self._x[0]}, {self._x[-1]}] (guest TSC); the offset there was "
                             f"never measured, so it is not mapped")
        i = bisect_right(self._x, g) - 1
        if self._x[i] == g:
            return self._mid[i], Fraction(self._hi[i] - self._lo[i], 2)
        x0, x1 = self._x[i], self._x[i + 1]
        m0, m1 = self._mid[i], self._mid[i + 1]
        m = m0 + (m1 - m0) * Fraction(g - x0, x1 - x0)
        low = min(self._lo[i], self._lo[i + 1])
        high = max(self._hi[i], self._hi[i + 1])
        return m, max(high - m, m - low)

    def to_host(self, guest_tsc: int) -> tuple[int, int]:
        """(host TSC, bound in host cycles) for a guest TSC stamp between the first and last
        point; the true host time lies in [host - bound, host + bound] under the module's
        assumption (a monotone offset between neighbouring points). ValueError outside."""
        g = _count(guest_tsc, "the guest TSC stamp")
        m, bound = self._exact(g)
        exact = g - m
        host = _round_half_up(exact)
        return host, ceil(bound + abs(host - exact))

    def to_host_interval(self, g0: int, g1: int) -> HostInterval:
        """A guest interval [g0, g1] mapped to host TSC, each end with its bound."""
        g0 = _count(g0, "the interval's start")
        g1 = _count(g1, "the interval's end")
        if g1 < g0:
            raise ValueError(f"the guest interval ends at {g1}, before its start {g0}")
        h0, b0 = self.to_host(g0)
        h1, b1 = self.to_host(g1)
        return HostInterval(h0, h1, b0, b1)

    def segment_bounds(self) -> list[Fraction]:
        """Each segment's largest bound (at its worse end): max(U - min(m), max(m) - L)."""
        out = []
        for i in range(len(self._x) - 1):
            low = min(self._lo[i], self._lo[i + 1])
            high = max(self._hi[i], self._hi[i + 1])
            m0, m1 = self._mid[i], self._mid[i + 1]
            out.append(max(high - min(m0, m1), max(m0, m1) - low))
        return out

    def offset_slope_ppm(self) -> float:
        """The offset's overall slope, (m_last - m_first) / (x_last - x_first), in ppm."""
        return float((self._mid[-1] - self._mid[0]) / (self._x[-1] - self._x[0]) * 1_000_000)

    def report(self) -> dict:
        """points, brackets (host_after - host_before) and segment bounds (median, max; host
        cycles), the offset's slope in ppm, the guest span covered."""
        brackets = [p.host_after - p.host_before for p in self.points]
        bounds = self.segment_bounds()
        return {
            "points": len(self.points),
            "bracket_median_cycles": float(median(brackets)),
            "bracket_max_cycles": max(brackets),
            "bound_median_cycles": float(median(bounds)),
            "bound_max_cycles": float(max(bounds)),
            "offset_slope_ppm": self.offset_slope_ppm(),
            "guest_span": [self._x[0], self._x[-1]],
        }


def fit(points) -> ClockMap:
    """Check the clock points (host_before, host_after, guest), in the order they were taken,
    and return their ClockMap. ValueError with a sentence naming the first bad point."""
    pts = []
    for i, p in enumerate(points):
        try:
            hb, ha, g = p
        except (TypeError, ValueError):
            raise ValueError(f"clock point {i} is {p!r}, not (host_before, host_after, guest)") from None
        pt = ClockPoint(_count(hb, f"clock point {i}'s host_before"),
                        _count(ha, f"clock point {i}'s host_after"),
                        _count(g, f"clock point {i}'s guest TSC"))
        if pt.host_after < pt.host_before:
            raise ValueError(f"clock point {i}: host_after {pt.host_after} is before host_before "
                             f"{pt.host_before}")
        if pts:
            prev = pts[-1]
            if pt.host_before < prev.host_after:
                raise ValueError(f"clock point {i}: host_before {pt.host_before} is before point "
                                 f"{i - 1}'s host_after {prev.host_after}; the host times must "
                                 f"increase (each exchange begins after the previous one ended)")
            if pt.guest <= prev.guest:
                raise ValueError(f"clock point {i}: guest TSC {pt.guest} is not after point "
                                 f"{i - 1}'s {prev.guest}; the guest's TSC went backwards or "
                                 f"stood still")
        pts.append(pt)
    if len(pts) < 2:
        raise ValueError(f"the clock fit needs at least 2 points, it was given {len(pts)}")
    return ClockMap(pts)
