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

}  // namespace

size_t format_percent(uint64_t count, uint64_t total, char* buf, size_t cap) {
    uint64_t bp = 0;  // basis points: hundredths of a percent
    if (total != 0) {
        // count * 10000 must not overflow; halving both keeps the ratio within rounding.
        while (count > ~0ull / 10000) {
            count >>= 1;
            total >>= 1;
        }
        // count above total (a skewed or hostile reading) can halve total to 0.
        if (total != 0) bp = (count * 10000 + total / 2) / total;
    }
    return size_t(format(buf, cap, "%llu.%02llu", (unsigned long long)(bp / 100),
                         (unsigned long long)(bp % 100)));
}

size_t format_wait_table(const LockClassPerf& c, char* buf, size_t cap) {
    Out out(buf, cap);
    header(out, "all acquisitions");
    bucket_rows(out, c.wait_hist, c.acquisitions);
    row(out, "overflow", c.wait_overflow, c.acquisitions);
    row(out, "uncontended", c.uncontended, c.acquisitions);
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
