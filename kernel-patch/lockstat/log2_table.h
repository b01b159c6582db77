// lockstat/log2_table.h: the log2 wait table, `2^k  count  %`, as bcc's print_log2_hist prints
// a histogram: stable and diffable. Freestanding (no printf), so the guest's spinstat, the
// kernel's self-tests and the host collector print the same bytes.
//
// Wait table: a header, one row per bucket from the first non-empty bucket to the last non-empty
// one (empty ones in between included), then `overflow` and `uncontended`. The percentages are of
// all acquisitions, as in the original WRK experiment (which timed every acquisition), so the rows
// add up to 100 (give or take rounding); the header says so. spinlab-report prints the same table
// for the same counters (analysis/spinlab_report/table.py; a pytest compares the two through
// log2_table_print).
// Hold table: the same bucket rows and `overflow`, percentages of the timed holds.
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
size_t format_wait_table(const LockClassPerf& c, char* buf, size_t cap);
size_t format_hold_table(const LockClassPerf& c, char* buf, size_t cap);

// count / total as a percentage with two decimals, rounded half up ("98.06"; "0.00" when
// total is 0). Writes at most cap - 1 characters and a NUL; returns the full length.
size_t format_percent(uint64_t count, uint64_t total, char* buf, size_t cap);

}  // namespace spinlab::lockstat
