"""The original WRK experiment's own table, `2^k  count  %`, for runs booted with timing=all (pure).

The original "Measuring Spin-Locks" experiment (docs/architecture.md, "Where the design comes
from") timed every acquisition with `cpuid; rdtsc` and printed one row per most significant bit of
the time taken:

    cycles       count       %
    2^ 6             0
    2^ 7           135   00.20
    2^ 8         67749   98.06

A guest booted with `timing=all` does the same (kernel-patch/lockstat/timing.h): every acquisition
lands in a wait bucket, first-try wins included, so the table has the uncontended peak (near 2^8
cycles on bare metal) that the default timing, which times contended waits only, cannot show.

The form, byte for byte what the runner prints at the end of such a run (`spinlab run --spec wrk`;
the formatter there is kernel-patch/lockstat/log2_table.cc's format_wrk_table, and
tests/test_wrk_table.py holds the two against each other):
- rows from one bucket below the first non-empty one to one above the last (within 0..63), empty
  ones included, as the original table shows an empty 2^6 and 2^12 around its counts;
- the exponent right-aligned in two columns (`2^ 7`, `2^10`);
- % of all timed acquisitions (the buckets and the overflow), two decimals rounded half up,
  zero-padded to two integer digits (`00.20`), and left blank where it rounds to 0.00, as the
  original leaves it blank for its counts of 0, 3 and 1;
- an `overflow` row (acquisitions whose clock went backwards) only when there are any; the
  original had none.
"""

from .buckets import NBUCKETS, nonempty_range

LABEL_W, COUNT_W, PCT_W = 8, 10, 8  # log2_table.cc's kWrkLabelWidth, kWrkCountWidth, kWrkPercentWidth
U64_MAX = (1 << 64) - 1
TIMING_ALL = "timing=all"


def timing_all(meta) -> bool:
    """Whether the run's guest was booted with timing=all (meta: the run's reader.Meta; meta.json's
    kernel_append names it; the kernel refuses to boot with a bad value, so a run that started had it)."""
    append = meta.kernel_append or ""
    if not isinstance(append, str):
        raise ValueError(f"meta.json: kernel_append must be a string, got {type(append).__name__}")
    return TIMING_ALL in append.split()


def basis_points(count: int, total: int) -> int:
    """count / total in hundredths of a percent, rounded half up, as log2_table.cc's
    format_percent computes it (both halved while count * 10000 would overflow 64 bits)."""
    if not total:
        return 0
    while count > U64_MAX // 10000:
        count >>= 1
        total >>= 1
    return (count * 10000 + total // 2) // total if total else 0


def percent_field(count: int, total: int) -> str:
    """`00.20`, `98.06`, `100.00`; empty where the share rounds to 0.00."""
    bp = basis_points(count, total)
    return f"{bp // 100:02d}.{bp % 100:02d}" if bp else ""


def _row(label: str, count: int, total: int) -> str:
    return f"{label:<{LABEL_W}}{count:>{COUNT_W}}{percent_field(count, total):>{PCT_W}}".rstrip()


def rows_range(hist) -> tuple[int, int] | None:
    """(first, last) bucket printed: one either side of the non-empty ones, within 0..63."""
    rng = nonempty_range(hist)
    if rng is None:
        return None
    return max(rng[0] - 1, 0), min(rng[1] + 1, NBUCKETS - 1)


def wrk_table(hist, overflow: int) -> str:
    """The table for one merged histogram (64 buckets) and its overflow count."""
    hist = [int(x) for x in hist]
    if len(hist) != NBUCKETS:
        raise ValueError(f"a wait histogram has {NBUCKETS} buckets, got {len(hist)}")
    total = sum(hist) + int(overflow)
    lines = [f"{'cycles':<{LABEL_W}}{'count':>{COUNT_W}}{'%':>{PCT_W}}"]
    rng = rows_range(hist)
    if rng is not None:
        lines += [_row(f"2^{k:>2}", hist[k], total) for k in range(rng[0], rng[1] + 1)]
    if overflow:
        lines.append(_row("overflow", int(overflow), total))
    return "\n".join(lines) + "\n"


def peak(hist) -> int | None:
    """The bucket with the most acquisitions (the lowest on a tie), None when empty."""
    hist = [int(x) for x in hist]
    return max(range(len(hist)), key=lambda k: (hist[k], -k)) if any(hist) else None


def phase_text(phase: str, t, reps: int) -> str:
    """One phase's block: a title line (with where the peak is), then the table; the runner's
    WrkSummary (experiments/runner/wrk_summary.cc) prints the same."""
    if t is None:
        return f"phase {phase}: missing (no snapshot recorded)\n"
    timed = int(t.wait.sum()) + t.overflow
    k = peak(t.wait)
    bp = basis_points(int(t.wait[k]), timed) if k is not None else 0
    where = f"; peak 2^{k} with {bp // 100}.{bp % 100:02d} %" if k is not None else ""
    return (f"phase {phase} ({reps} repetition{'s' if reps != 1 else ''}, all CPUs and lock classes): "
            f"{timed} timed acquisitions{where}\n" + wrk_table(t.wait, t.overflow))


def wrk_text(phase_totals: dict, reps: dict) -> str:
    """All phases, separated by blank lines; phase_totals maps phase -> Totals or None."""
    return "\n".join(phase_text(p, t, reps.get(p, 0)) for p, t in phase_totals.items())


def section(meta, phase_totals: dict, reps: dict) -> list:
    """The report's blocks for a timing=all run ([] for any other run)."""
    if not timing_all(meta):
        return []
    clock = meta.clock or "the booted clock"
    return [("h2", "The original experiment's table (timing=all)"),
            ("p", f"The guest timed every acquisition, first-try wins included, with {clock}, as the "
                  "original WRK experiment did: each row counts acquisitions whose time from just before "
                  "the first try to holding the lock had its most significant bit at 2^k cycles; % is of "
                  "all timed acquisitions. The peak is the uncontended case (2^8 on the original's bare "
                  "metal); under timing=all the uncontended row of the log2 wait table is 0, and its "
                  "contended counts include these first-try wins."),
            ("pre", wrk_text(phase_totals, reps))]
