"""The seed's table, `2^k  count  %`, per phase, as stable diffable text and as CSV (pure).

Rows run from the first to the last non-empty wait bucket (empty buckets in between shown as
0), then overflow, then uncontended and the acquisitions total. The % column of bucket and
overflow rows is the share of contended acquisitions (timed waits + overflows), as the seed's
percentages are shares of measured acquisitions; the uncontended row's % is of all acquisitions.
"""
import csv
import io

from .aggregate import Totals
from .buckets import NBUCKETS, bucket_edges, bucket_label, nonempty_range


def _pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:6.2f}" if d else "     -"


def _row(label: str, count, pct: str) -> str:
    return f"  {label:<12}{count:>12}  {pct}"


def phase_table(phase: str, t: Totals | None, reps: int) -> str:
    """The text block for one phase; a missing phase or empty histogram says so in place of rows."""
    head = f"phase {phase}"
    if t is None:
        return f"{head}: missing (no snapshot recorded)\n"
    lines = [f"{head} ({reps} repetition{'s' if reps != 1 else ''}, all CPUs and lock classes)",
             _row("cycles", "count", "     %")]
    rng = nonempty_range(t.wait)
    if rng is None:
        lines.append("  (no timed contended waits: the histogram is empty)")
    else:
        for k in range(rng[0], rng[1] + 1):
            lines.append(_row(bucket_label(k), int(t.wait[k]), _pct(int(t.wait[k]), t.contended)))
    lines.append(_row("overflow", t.overflow, _pct(t.overflow, t.contended)))
    lines.append(_row("uncontended", t.uncontended, _pct(t.uncontended, t.acquisitions)) + "  (of acquisitions)")
    lines.append(_row("acquisitions", t.acquisitions, "").rstrip())
    return "\n".join(lines) + "\n"


def table_text(phase_totals: dict, reps: dict) -> str:
    """All phases, separated by blank lines; phase_totals maps phase -> Totals or None."""
    return "\n".join(phase_table(p, t, reps.get(p, 0)) for p, t in phase_totals.items())


def table_csv(phase_totals: dict) -> str:
    """Machine-readable table: all 64 buckets per phase, then overflow and uncontended rows."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["phase", "row", "k", "lo_cycles", "hi_cycles", "count", "percent"])
    for phase, t in phase_totals.items():
        if t is None:
            continue
        for k in range(NBUCKETS):
            lo, hi = bucket_edges(k)
            n = int(t.wait[k])
            w.writerow([phase, "wait", k, lo, hi, n, f"{100.0 * n / t.contended:.4f}" if t.contended else ""])
        w.writerow([phase, "overflow", "", "", "", t.overflow,
                    f"{100.0 * t.overflow / t.contended:.4f}" if t.contended else ""])
        w.writerow([phase, "uncontended", "", "", "", t.uncontended,
                    f"{100.0 * t.uncontended / t.acquisitions:.4f}" if t.acquisitions else ""])
    return out.getvalue()
