// lib/memmap.cc: see memmap.h.
#include "memmap.h"

namespace memmap {
namespace {

uint64_t rd64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
uint32_t rd32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }

void insert_sorted(Map& m, Range x) {
    if (x.end <= x.base) return;
    // Merge with any overlapping or adjacent range, then insert in order.
    for (int i = 0; i < m.n;) {
        if (x.base <= m.r[i].end && m.r[i].base <= x.end) {
            if (m.r[i].base < x.base) x.base = m.r[i].base;
            if (m.r[i].end > x.end) x.end = m.r[i].end;
            for (int j = i; j + 1 < m.n; j++) m.r[j] = m.r[j + 1];
            m.n--;
        } else {
            i++;
        }
    }
    if (m.n == kMaxRanges) {
        m.truncated = true;
        return;
    }
    int i = m.n;
    while (i > 0 && m.r[i - 1].base > x.base) {
        m.r[i] = m.r[i - 1];
        i--;
    }
    m.r[i] = x;
    m.n++;
}

}  // namespace

uint64_t Map::total() const {
    uint64_t t = 0;
    for (int i = 0; i < n; i++) t += r[i].end - r[i].base;
    return t;
}

Map from_multiboot(const uint8_t* entries, uint32_t length) {
    Map m;
    Map reserved;  // non-usable entries win over usable ones that overlap them
    for (uint32_t off = 0; off + 24 <= length;) {
        const uint8_t* e = entries + off;
        uint32_t size = rd32(e);
        uint64_t base = rd64(e + 4), len = rd64(e + 12);
        uint32_t type = rd32(e + 20);
        if (size < 20) break;  // malformed: stop rather than loop on garbage
        uint64_t end = base + len < base ? ~0ull : base + len;
        if (type == 1) {
            uint64_t b = (base + kPage - 1) & ~(kPage - 1), en = end & ~(kPage - 1);
            if (en > b) insert_sorted(m, {b, en});
        } else {
            insert_sorted(reserved, {base, end});
        }
        off += size + 4;
    }
    for (int i = 0; i < reserved.n; i++) subtract(m, reserved.r[i]);
    return m;
}

void subtract(Map& m, Range x) {
    x.base &= ~(kPage - 1);
    // Round the end up to a page, saturating: {base, ~0} means "everything above base".
    x.end = x.end > ~0ull - (kPage - 1) ? ~(kPage - 1) : (x.end + kPage - 1) & ~(kPage - 1);
    Map out;
    out.truncated = m.truncated;
    for (int i = 0; i < m.n; i++) {
        Range r = m.r[i];
        if (x.end <= r.base || r.end <= x.base) {
            insert_sorted(out, r);
            continue;
        }
        if (r.base < x.base) insert_sorted(out, {r.base, x.base});
        if (x.end < r.end) insert_sorted(out, {x.end, r.end});
    }
    m = out;
}

}  // namespace memmap
