// lockstat/log2_table.cc: see log2_table.h.
#include "log2_table.h"

namespace spinlab::lockstat {

namespace {

constexpr int kLabelWidth = 12;  // "uncontended" fits with a space to spare
constexpr int kCountWidth = 14;  // up to 10^14 acquisitions without breaking the columns
constexpr int kPercentWidth = 8;

// Appends to a fixed buffer, counting what it could not store (snprintf semantics).
class Out {
  public:
    Out(char* buf, size_t cap) : buf_(buf), cap_(cap) {}

    void put(char ch) {
        if (len_ + 1 < cap_) buf_[len_] = ch;
        len_++;
    }
    void str(const char* s) {
        while (*s) put(*s++);
    }
    void pad(int n) {
        while (n-- > 0) put(' ');
    }
    void left(const char* s, int width) {
        int n = 0;
        while (s[n]) n++;
        str(s);
        pad(width - n);
    }
    void right(const char* s, int width) {
        int n = 0;
        while (s[n]) n++;
        pad(width - n);
        str(s);
    }
    size_t finish() {
        if (cap_ > 0) buf_[len_ < cap_ ? len_ : cap_ - 1] = '\0';
        return len_;
    }

  private:
    char* buf_;
    size_t cap_;
    size_t len_ = 0;
};

// Decimal digits of v into s (at least 21 bytes); returns s.
char* u64_to_str(uint64_t v, char* s) {
    char tmp[21];
    int n = 0;
    do {
        tmp[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++) s[i] = tmp[n - 1 - i];
    s[n] = '\0';
    return s;
}

void row(Out& out, const char* label, uint64_t count, uint64_t total) {
    char num[21], pct[24];
    out.left(label, kLabelWidth);
    out.right(u64_to_str(count, num), kCountWidth);
    format_percent(count, total, pct, sizeof pct);
    out.right(pct, kPercentWidth);
    out.put('\n');
}

// The header names what the % column divides by, so a table read on its own cannot be
// mistaken for shares of contended acquisitions (spinlab-report prints the same header).
void header(Out& out, const char* of) {
    out.left("cycles", kLabelWidth);
    out.right("count", kCountWidth);
    out.right("%", kPercentWidth);
    out.str("  of ");
    out.str(of);
    out.put('\n');
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
        char label[8] = {'2', '^'};
        u64_to_str(static_cast<uint64_t>(k), label + 2);
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
        bp = (count * 10000 + total / 2) / total;
    }
    char whole[21],
        frac[3] = {static_cast<char>('0' + bp % 100 / 10), static_cast<char>('0' + bp % 10), '\0'};
    Out out(buf, cap);
    out.str(u64_to_str(bp / 100, whole));
    out.put('.');
    out.str(frac);
    return out.finish();
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
