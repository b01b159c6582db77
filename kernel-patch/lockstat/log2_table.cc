// lockstat/log2_table.cc: see log2_table.h.
#include "log2_table.h"

#include <stdarg.h>

#include "../lib/format.h"

namespace spinlab::lockstat {

namespace {

constexpr int kLabelWidth = 12;  // "uncontended" fits with a space to spare
constexpr int kCountWidth = 14;  // up to 10^14 acquisitions without breaking the columns
constexpr int kPercentWidth = 8;

// Appends format()'s output to a fixed buffer, counting what it could not store: snprintf's
// contract (the length the whole text needs; NUL-terminated when cap > 0) over several calls.
class Out {
  public:
    Out(char* buf, size_t cap) : buf_(buf), cap_(cap) {
        if (cap_ > 0) buf_[0] = '\0';
    }

    void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
        va_list ap;
        va_start(ap, fmt);
        const bool room = len_ < cap_;
        len_ += size_t(vformat(room ? buf_ + len_ : nullptr, room ? cap_ - len_ : 0, fmt, ap));
        va_end(ap);
    }
    size_t finish() const { return len_; }

  private:
    char* buf_;
    size_t cap_;
    size_t len_ = 0;
};

void row(Out& out, const char* label, uint64_t count, uint64_t total) {
    char pct[24];
    format_percent(count, total, pct, sizeof pct);
    out.add("%-*s%*llu%*s\n", kLabelWidth, label, kCountWidth, (unsigned long long)count,
            kPercentWidth, pct);
}

// The header names what the % column divides by, so a table read on its own cannot be
// mistaken for shares of contended acquisitions (spinlab-report prints the same header).
void header(Out& out, const char* of) {
    out.add("%-*s%*s%*s  of %s\n", kLabelWidth, "cycles", kCountWidth, "count", kPercentWidth, "%", of);
}

void bucket_rows(Out& out, const uint64_t* hist, uint64_t total) {
    int first = -1, last = -1;
    for (int k = 0; k < static_cast<int>(kHistBuckets); k++) {
        if (hist[k] == 0) continue;
        if (first < 0) first = k;
        last = k;
    }
    if (first < 0) return;
    for (int k = first; k <= last; k++) {
        char label[8];
        format(label, sizeof label, "2^%d", k);
        row(out, label, hist[k], total);
    }
}

// The WRK table's columns (format_wrk_table; wrk_table.py's LABEL_W, COUNT_W, PCT_W).
constexpr int kWrkLabelWidth = 8;  // "overflow" fits
constexpr int kWrkCountWidth = 10;
constexpr int kWrkPercentWidth = 8;

// Basis points (hundredths of a percent) of count in total, rounded half up; 0 when total is 0.
uint64_t basis_points(uint64_t count, uint64_t total) {
    if (total == 0) return 0;
    // count * 10000 must not overflow; halving both keeps the ratio within rounding.
    while (count > ~0ull / 10000) {
        count >>= 1;
        total >>= 1;
    }
    // count above total (a skewed or hostile reading) can halve total to 0.
    return total != 0 ? (count * 10000 + total / 2) / total : 0;
}

// One WRK row; the % column is left out (no trailing blanks) where it rounds to 0.00.
void wrk_row(Out& out, const char* label, uint64_t count, uint64_t total) {
    const uint64_t bp = basis_points(count, total);
    out.add("%-*s%*llu", kWrkLabelWidth, label, kWrkCountWidth, (unsigned long long)count);
    if (bp != 0) {
        char pct[24];
        format(pct, sizeof pct, "%02llu.%02llu", (unsigned long long)(bp / 100),
               (unsigned long long)(bp % 100));
        out.add("%*s", kWrkPercentWidth, pct);
    }
    out.add("\n");
}

}  // namespace

size_t format_wrk_table(const uint64_t* hist, uint64_t overflow, char* buf, size_t cap) {
    Out out(buf, cap);
    out.add("%-*s%*s%*s\n", kWrkLabelWidth, "cycles", kWrkCountWidth, "count", kWrkPercentWidth, "%");
    uint64_t total = overflow;
    int first = -1, last = -1;
    for (int k = 0; k < static_cast<int>(kHistBuckets); k++) {
        total += hist[k];
        if (hist[k] == 0) continue;
        if (first < 0) first = k;
        last = k;
    }
    if (first >= 0) {
        // One empty row either side, as the original table shows 2^6 and 2^12 around its counts.
        const int from = first > 0 ? first - 1 : 0;
        const int to = last < static_cast<int>(kHistBuckets) - 1 ? last + 1 : last;
        for (int k = from; k <= to; k++) {
            char label[8];
            format(label, sizeof label, "2^%2d", k);
            wrk_row(out, label, hist[k], total);
        }
    }
    if (overflow != 0) wrk_row(out, "overflow", overflow, total);
    return out.finish();
}

size_t format_percent(uint64_t count, uint64_t total, char* buf, size_t cap) {
    const uint64_t bp = basis_points(count, total);
    return size_t(format(buf, cap, "%llu.%02llu", (unsigned long long)(bp / 100),
                         (unsigned long long)(bp % 100)));
}

size_t format_wait_table(const LockClassPerf& c, char* buf, size_t cap, AcquisitionsCounted counted) {
    Out out(buf, cap);
    const bool contended_only = counted == AcquisitionsCounted::kContendedOnly;
    header(out, contended_only ? "contended acquisitions only" : "all acquisitions");
    bucket_rows(out, c.wait_hist, c.acquisitions);
    row(out, "overflow", c.wait_overflow, c.acquisitions);
    // Where first-try wins are not seen, an `uncontended` row of 0 would read as "none".
    if (!contended_only) row(out, "uncontended", c.uncontended, c.acquisitions);
    return out.finish();
}

size_t format_hold_table(const LockClassPerf& c, char* buf, size_t cap) {
    Out out(buf, cap);
    header(out, "timed holds");
    bucket_rows(out, c.hold_hist, c.holds_timed);
    row(out, "overflow", c.hold_overflow, c.holds_timed);
    return out.finish();
}

}  // namespace spinlab::lockstat
