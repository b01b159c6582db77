// lib/ustar.cc: see ustar.h. 512-byte headers: name[100] at 0, size (octal) at 124, checksum
// at 148, type at 156, "ustar" at 257, prefix[155] at 345; data padded to 512 bytes.
#include "ustar.h"

namespace ustar {
namespace {

bool octal(const uint8_t* p, int n, uint64_t* v) {
    *v = 0;
    int i = 0;
    while (i < n && p[i] == ' ') i++;
    bool any = false;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
        *v = *v * 8 + uint64_t(p[i] - '0');
        any = true;
    }
    return any && (i == n || p[i] == 0 || p[i] == ' ');
}

const char* strip(const char* s) {
    if (s[0] == '.' && s[1] == '/') s += 2;
    while (*s == '/') s++;
    return s;
}

bool same(const char* a, const char* b) {
    a = strip(a);
    b = strip(b);
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

}  // namespace

bool Reader::next(File* f) {
    while (off_ + 512 <= size_) {
        const uint8_t* h = a_ + off_;
        if (h[0] == 0) return false;  // end-of-archive block
        uint64_t sum = 0, want;
        for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
        uint64_t size;
        if (!octal(h + 148, 8, &want) || want != sum || !octal(h + 124, 12, &size) ||
            size > size_ - off_ - 512) {
            damaged_ = true;
            return false;
        }
        int n = 0;
        if (h[345]) {  // ustar prefix, then '/'
            for (int i = 0; i < 155 && h[345 + i]; i++) name_[n++] = char(h[345 + i]);
            name_[n++] = '/';
        }
        for (int i = 0; i < 100 && h[i]; i++) name_[n++] = char(h[i]);
        name_[n] = '\0';
        uint8_t type = h[156];
        const uint8_t* data = h + 512;
        off_ += 512 + (size + 511) / 512 * 512;
        if (type == '0' || type == 0) {
            *f = {name_, data, size};
            return true;
        }
    }
    return false;
}

bool find(const uint8_t* archive, size_t size, const char* name, File* out) {
    Reader r(archive, size);
    File f;
    while (r.next(&f))
        if (same(f.name, name)) {
            *out = f;
            out->name = name;  // f.name points into r, which ends here
            return true;
        }
    return false;
}

}  // namespace ustar
