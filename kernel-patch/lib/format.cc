// lib/format.cc: see format.h.
#include "format.h"

#include <stdint.h>

namespace {

struct Out {
    char* buf;
    size_t size;
    size_t len;
    void put(char c) {
        if (len + 1 < size) buf[len] = c;
        len++;
    }
};

void put_number(Out& o, uint64_t v, unsigned base, bool neg, int width, bool zero, bool left) {
    char tmp[24];
    int n = 0;
    do {
        unsigned d = v % base;
        tmp[n++] = char(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    int len = n + (neg ? 1 : 0);
    if (!left && !zero)
        for (; len < width; len++) o.put(' ');
    if (neg) o.put('-');
    if (!left && zero)
        for (; len < width; len++) o.put('0');
    while (n) o.put(tmp[--n]);
    if (left)
        for (; len < width; len++) o.put(' ');
}

}  // namespace

int vformat(char* buf, size_t size, const char* fmt, va_list ap) {
    Out o{buf, size, 0};
    for (const char* p = fmt; *p; p++) {
        if (*p != '%') {
            o.put(*p);
            continue;
        }
        p++;
        bool zero = false, left = false;
        for (;; p++) {
            if (*p == '0') zero = true;
            else if (*p == '-') left = true;
            else break;
        }
        int width = 0;
        if (*p == '*') {
            width = va_arg(ap, int);
            p++;
        }
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        int precision = -1;  // for %s: at most this many characters
        if (*p == '.') {
            p++;
            precision = 0;
            if (*p == '*') {
                precision = va_arg(ap, int);
                p++;
            }
            while (*p >= '0' && *p <= '9') precision = precision * 10 + (*p++ - '0');
        }
        int longs = 0;
        while (*p == 'l') longs++, p++;
        if (*p == 'z') longs = 2, p++;
        switch (*p) {
        case 'd': {
            int64_t v = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
            put_number(o, v < 0 ? uint64_t(-v) : uint64_t(v), 10, v < 0, width, zero, left);
            break;
        }
        case 'u':
        case 'x': {
            uint64_t v = longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            put_number(o, v, *p == 'x' ? 16 : 10, false, width, zero, left);
            break;
        }
        case 'p':
            o.put('0');
            o.put('x');
            put_number(o, uint64_t(va_arg(ap, void*)), 16, false, 16, true, false);
            break;
        case 's': {
            const char* s = va_arg(ap, const char*);
            if (!s) s = "(null)";
            int n = 0;
            while (s[n] && (precision < 0 || n < precision)) n++;
            if (!left)
                for (int i = n; i < width; i++) o.put(' ');
            for (int i = 0; i < n; i++) o.put(s[i]);
            if (left)
                for (int i = n; i < width; i++) o.put(' ');
            break;
        }
        case 'c':
            o.put(char(va_arg(ap, int)));
            break;
        case '%':
            o.put('%');
            break;
        case '\0':
            p--;
            break;
        default:
            o.put('%');
            o.put(*p);
        }
    }
    if (size) buf[o.len < size ? o.len : size - 1] = '\0';
    return int(o.len);
}

int format(char* buf, size_t size, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vformat(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
