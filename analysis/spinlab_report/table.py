"""The log2 wait table, `2^k  count  %`, per phase, as stable diffable text and as CSV (pure).

The text is byte for byte what the guest's spinstat prints for the same counters (its
formatter is kernel-patch/lockstat/log2_table.cc; tests/test_table_parity.py holds the two
against each other): a header, rows from the first to the last non-empty wait bucket (empty
ones in between shown as 0), then overflow and uncontended. One definition of the %: every row
is a share of all acquisitions, as in the original WRK experiment, which timed every
acquisition; so the rows add up to 100 and the header says "of all acquisitions". Where only
contended acquisitions were counted (a Linux guest's slow-path probe: the snapshots'
acquisitions_counted), the rows are shares of those, the header says "of contended acquisitions
only", and neither the text nor the CSV has an uncontended row, since first-try wins were not
seen. Each phase's block is preceded by a title line with the phase, its
repetitions and its acquisitions.
"""
import csv
import io

from .aggregate import Totals
from .buckets import NBUCKETS, bucket_edges, bucket_label, nonempty_range

PCT_OF = "all acquisitions"
PCT_OF_CONTENDED = "contended acquisitions only"
LABEL_W, COUNT_W, PCT_W = 12, 14, 8  # log2_table.cc's kLabelWidth, kCountWidth, kPercentWidth
U64_MAX = (1 << 64) - 1


def format_percent(count: int, total: int) -> str:
    """count / total in percent with two decimals, rounded half up, as log2_table.cc computes it
    (integer basis points; both halved while count * 10000 would overflow 64 bits)."""
    bp = 0
    if total:
        while count > U64_MAX // 10000:
            count >>= 1
            total >>= 1
        bp = (count * 10000 + total // 2) // total
    return f"{bp // 100}.{bp % 100:02d}"


def _row(label: str, count: int, total: int) -> str:
    return f"{label:<{LABEL_W}}{count:>{COUNT_W}}{format_percent(count, total):>{PCT_W}}"


def wait_table(t: Totals) -> str:
    """The guest's format_wait_table for these counters."""
    of = PCT_OF_CONTENDED if t.contended_only else PCT_OF
    lines = [f"{'cycles':<{LABEL_W}}{'count':>{COUNT_W}}{'%':>{PCT_W}}  of {of}"]
    rng = nonempty_range(t.wait)
    if rng is not None:
        lines += [_row(bucket_label(k), int(t.wait[k]), t.acquisitions) for k in range(rng[0], rng[1] + 1)]
    lines.append(_row("overflow", t.overflow, t.acquisitions))
    if not t.contended_only:
        lines.append(_row("uncontended", t.uncontended, t.acquisitions))
    return "\n".join(lines) + "\n"


def phase_table(phase: str, t: Totals | None, reps: int) -> str:
    """The text block for one phase; a missing phase says so in place of the table."""
    head = f"phase {phase}"
    if t is None:
        return f"{head}: missing (no snapshot recorded)\n"
    what = "contended acquisitions" if t.contended_only else "acquisitions"
    return (f"{head} ({reps} repetition{'s' if reps != 1 else ''}, all CPUs and lock classes): "
            f"{t.acquisitions} {what}\n" + wait_table(t))


def table_text(phase_totals: dict, reps: dict) -> str:
    """All phases, separated by blank lines; phase_totals maps phase -> Totals or None."""
    return "\n".join(phase_table(p, t, reps.get(p, 0)) for p, t in phase_totals.items())


def table_csv(phase_totals: dict) -> str:
    """Machine-readable table: all 64 buckets per phase, then overflow and uncontended rows;
    percent is of all acquisitions, as in the text. Where only contended acquisitions were
    counted, percent is of those and there is no uncontended row (not seen, not 0)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["phase", "row", "k", "lo_cycles", "hi_cycles", "count", "percent"])
    for phase, t in phase_totals.items():
        if t is None:
            continue
        for k in range(NBUCKETS):
            lo, hi = bucket_edges(k)
            n = int(t.wait[k])
            w.writerow([phase, "wait", k, lo, hi, n, f"{100.0 * n / t.acquisitions:.4f}" if t.acquisitions else ""])
        w.writerow([phase, "overflow", "", "", "", t.overflow,
                    f"{100.0 * t.overflow / t.acquisitions:.4f}" if t.acquisitions else ""])
        if not t.contended_only:
            w.writerow([phase, "uncontended", "", "", "", t.uncontended,
                        f"{100.0 * t.uncontended / t.acquisitions:.4f}" if t.acquisitions else ""])
    return out.getvalue()
