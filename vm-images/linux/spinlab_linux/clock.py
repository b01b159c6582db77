"""The guest's clock against the host's: the host helper spinlab-linux-clock and its points.

The agent answers each 8-byte ping on the virtio-serial port org.spinlab.clock with the ping
and its rdtsc (the guest TSC); the helper (host/spinlab-linux-clock.c, gcc -static like the
agent, build/linux/spinlab-linux-clock) reads the host TSC just before each ping and just after
its answer, every period (10 ms by default), and writes the points to a CSV
`host_before,host_after,guest`. Each point says: the guest's TSC read `guest` happened at a host
TSC inside [host_before, host_after] (the bracket). clockfit.fit (another module) turns the
points into a map guest TSC -> host TSC with a bound.

The guest's numbers are bad input until checked: read_points() checks every row (three
non-negative integers, host_after >= host_before, each exchange after the previous one, the
guest's TSC moving forward) and raises ClockError naming the first bad row, with the rows read
before it in .points.
"""
import json
import math
import subprocess
from pathlib import Path

from . import paths

HELPER = "spinlab-linux-clock"
HEADER = "host_before,host_after,guest"
PORT_NAME = "org.spinlab.clock"


class ClockError(ValueError):
    """A bad clock point file. .points: the points read (and checked) before the problem."""

    def __init__(self, message, points=()):
        super().__init__(message)
        self.points = list(points)


def helper_source():
    return paths.LINUX_DIR / "host" / f"{HELPER}.c"


def build_helper(out_path=None, cc="gcc"):
    """Compile host/spinlab-linux-clock.c (gcc -static -O2 -Wall -Wextra -Werror, as the agent)
    into build/linux/; rebuilt when the source is newer. The binary's path."""
    out_path = Path(out_path or paths.build_dir() / HELPER)
    src = helper_source()
    if out_path.is_file() and out_path.stat().st_mtime >= src.stat().st_mtime:
        return out_path
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp")
    cmd = [cc, "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(tmp), str(src)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise ClockError(f"{cc} is not installed (build-essential)")
    if r.returncode != 0:
        raise ClockError(f"compiling {HELPER} failed: {' '.join(cmd)}\n{r.stderr.strip()}")
    tmp.rename(out_path)
    return out_path


def helper_argv(helper, socket_path, out_csv, stats_json, period_ms=10.0):
    return [str(helper), "--socket", str(socket_path), "--out", str(out_csv),
            "--period-ms", f"{period_ms:g}", "--stats", str(stats_json)]


def parse_points(text, source="clock points"):
    """[(host_before, host_after, guest)] from the helper's CSV text, every row checked. A last
    line without its newline (the helper stopped while writing it) is left out, not an error."""
    lines = text.split("\n")
    if not lines or lines[0] != HEADER:
        raise ClockError(f"{source}: the first line is {lines[0][:80]!r}, not {HEADER!r}")
    body = lines[1:]
    if body and body[-1] == "":
        body = body[:-1]
    elif body:
        body = body[:-1]            # cut inside its last row
    points = []
    for n, line in enumerate(body, start=2):
        where = f"{source} line {n}"
        parts = line.split(",")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ClockError(f"{where}: {line[:80]!r} is not three non-negative integers", points)
        hb, ha, g = (int(p) for p in parts)
        if max(hb, ha, g) >= 1 << 64:
            raise ClockError(f"{where}: a value beyond 64 bits", points)
        if ha < hb:
            raise ClockError(f"{where}: host_after {ha} before host_before {hb}", points)
        if points:
            phb, pha, pg = points[-1]
            if hb < pha:
                raise ClockError(f"{where}: this exchange began ({hb}) before the previous one "
                                 f"ended ({pha})", points)
            if g <= pg:
                raise ClockError(f"{where}: the guest's TSC {g} is not after the previous "
                                 f"answer's {pg}", points)
        points.append((hb, ha, g))
    return points


def read_points(path):
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ClockError(f"cannot read {path}: {e.strerror}")
    return parse_points(text, str(path))


def _quantile(sorted_values, q):
    """The nearest-rank q-quantile of sorted values (None when empty)."""
    if not sorted_values:
        return None
    k = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[min(k, len(sorted_values) - 1)]


def bracket_stats(points, host_tsc_hz=None):
    """The brackets' widths (host_after - host_before, host TSC cycles): count, min, median,
    p90, p99, max; and in microseconds where the host TSC's rate is known."""
    w = sorted(ha - hb for hb, ha, _ in points)
    out = {"points": len(w), "min": w[0] if w else None, "median": _quantile(w, 0.5),
           "p90": _quantile(w, 0.9), "p99": _quantile(w, 0.99), "max": w[-1] if w else None}
    if host_tsc_hz:
        out["us"] = {k: (v / host_tsc_hz * 1e6 if v is not None else None)
                     for k, v in out.items() if k != "points"}
    return out


def select_points(points, window_cycles, max_bracket_cycles=None):
    """The points the map is fitted through: of the points whose bracket is at most
    max_bracket_cycles (None: all), the narrowest of each window of window_cycles host cycles.

    Why: a point's bracket is its own uncertainty, and clockfit's bound between two points is
    at least half the wider bracket. A slow answer (the agent's CPU spinning on a lock with
    preemption off, through a whole freeze of the holder; its vCPU thread waiting for a host
    CPU) widens the bound on both sides of it, where a narrow point nearby says the same more
    precisely. Any subset of checked points keeps clockfit's guarantee; sparser points lean
    more on its assumption (a monotone offset between neighbouring points)."""
    pts = [p for p in points if max_bracket_cycles is None or p[1] - p[0] <= max_bracket_cycles]
    if len(pts) <= 2 or window_cycles <= 0:
        return list(pts)
    best = {}
    t0 = pts[0][0]
    for i, (hb, ha, _) in enumerate(pts):
        k = (hb - t0) // window_cycles
        if k not in best or ha - hb < pts[best[k]][1] - pts[best[k]][0]:
            best[k] = i
    return [pts[i] for i in sorted(best.values())]


FIT_WINDOW_MS = 50         # fit_points: the narrowest point of each window...
FIT_MAX_BRACKET_MS = 1.0   # ... of those within max(this, 2 x the 10th percentile bracket)


def fit_points(points, host_tsc_hz, window_ms=FIT_WINDOW_MS, max_bracket_ms=FIT_MAX_BRACKET_MS):
    """select_points with the defaults the ground truth uses: brackets up to max_bracket_ms or
    twice the 10th percentile bracket, whichever is larger (a slower host answers slower
    throughout), the narrowest of each window_ms. Falls back to all points when fewer than 2
    pass."""
    w = sorted(ha - hb for hb, ha, _ in points)
    if not w:
        return []
    cap = max(max_bracket_ms * 1e-3 * host_tsc_hz, 2 * _quantile(w, 0.1))
    chosen = select_points(points, int(window_ms * 1e-3 * host_tsc_hz), int(cap))
    return chosen if len(chosen) >= 2 else list(points)


def offset_stats(points):
    """guest - host at the points' midpoints: the first and last (of the narrowest tenth of
    the points at each end), the drift between them in ppm of host time, the host cycles
    between the two and their half brackets (a quick look; clockfit's map is what maps)."""
    if len(points) < 2:
        return None
    k = max(1, len(points) // 10)
    a = min(points[:k], key=lambda p: p[1] - p[0])
    b = min(points[-k:], key=lambda p: p[1] - p[0])
    oa, ob = a[2] - (a[0] + a[1]) / 2, b[2] - (b[0] + b[1]) / 2
    span = (b[0] + b[1]) / 2 - (a[0] + a[1]) / 2
    return {"first": oa, "last": ob,
            "drift_ppm": (ob - oa) / span * 1e6 if span > 0 else None,
            "span_cycles": span, "end_half_brackets_cycles": [(a[1] - a[0]) / 2, (b[1] - b[0]) / 2]}


def read_helper_stats(path):
    try:
        s = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) else None
