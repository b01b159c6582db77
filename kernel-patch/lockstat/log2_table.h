// lockstat/log2_table.h: the log2 wait table, `2^k  count  %`, as bcc's print_log2_hist prints
// a histogram: stable and diffable. Freestanding (no printf), so the guest's spinstat, the
// kernel's self-tests and the host collector print the same bytes.
//
// Wait table: a header, one row per bucket from the first non-empty bucket to the last non-empty
// one (empty ones in between included), then `overflow` and `uncontended`. The percentages are of
// all acquisitions, as in the original WRK experiment (which timed every acquisition), so the rows
// add up to 100 (give or take rounding); the header says so. Where only contended acquisitions
// were counted (AcquisitionsCounted::kContendedOnly, a Linux guest's slow-path probe) the
// percentages are of those, the header says "of contended acquisitions only" and there is no
// `uncontended` row. spinlab-report prints the same table
// for the same counters (analysis/spinlab_report/table.py; a pytest compares the two through
// log2_table_print).
// Hold table: the same bucket rows and `overflow`, percentages of the timed holds.
// WRK table (format_wrk_table): the original experiment's own form, for a guest booted with
// timing=all (timing.h), where every acquisition is in a wait bucket; see below.
//
//   cycles               count       %  of all acquisitions
//   2^7                    135    0.19
//   2^8                  67749   98.06
//   overflow                 0    0.00
//   uncontended           1200    1.74
#pragma once

#include <spinlab/perfdata.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab::lockstat {

// snprintf's contract: writes at most cap - 1 characters and a NUL (if cap > 0) and returns
// the length of the whole table, so a caller whose buffer was too small knows what it needs.
// counted: what c.acquisitions counts (CpuPerfData::acquisitions_counted). Contended-only
// tables say "of contended acquisitions only" and have no `uncontended` row.
size_t format_wait_table(const LockClassPerf& c, char* buf, size_t cap,
                         AcquisitionsCounted counted = AcquisitionsCounted::kEveryAcquisition);
size_t format_hold_table(const LockClassPerf& c, char* buf, size_t cap);

// The original WRK experiment's table for one wait histogram (kHistBuckets counts) and its
// overflow count: rows from one bucket below the first non-empty one to one above the last
// (within 0..63), the exponent right-aligned (`2^ 7`, `2^10`), % of all timed acquisitions
// (buckets + overflow) zero-padded to two integer digits (`00.20`) and left blank where it
// rounds to 0.00; an `overflow` row only when there are any. spinlab-report prints the same
// (analysis/spinlab_report/wrk_table.py), the runner prints it at the end of a timing=all run.
//
//   cycles       count       %
//   2^ 6             0
//   2^ 7           135   00.20
//   2^ 8         67749   98.06
size_t format_wrk_table(const uint64_t* hist, uint64_t overflow, char* buf, size_t cap);

// count / total as a percentage with two decimals, rounded half up ("98.06"; "0.00" when
// total is 0). Writes at most cap - 1 characters and a NUL; returns the full length.
size_t format_percent(uint64_t count, uint64_t total, char* buf, size_t cap);

}  // namespace spinlab::lockstat
