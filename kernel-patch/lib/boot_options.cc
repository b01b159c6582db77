// lib/boot_options.cc: see boot_options.h.
#include "boot_options.h"

#include "format.h"

namespace bootopt {
namespace {

bool eq(const char* a, size_t alen, const char* b) {
    size_t i = 0;
    for (; i < alen; i++)
        if (b[i] != a[i]) return false;
    return b[i] == '\0';
}

Error fail(const char* what, const char* word, size_t wlen) {
    Error e{false, {}};
    format(e.message, sizeof e.message, "%s '%.*s'", what, int(wlen), word);
    return e;
}

// Choice index of value in "a|b|c", or -1.
int choice_index(const char* choices, const char* v, size_t vlen) {
    int idx = 0;
    const char* p = choices;
    while (*p) {
        const char* q = p;
        while (*q && *q != '|') q++;
        if (size_t(q - p) == vlen) {
            bool same = true;
            for (size_t i = 0; i < vlen; i++) same &= p[i] == v[i];
            if (same) return idx;
        }
        idx++;
        p = *q ? q + 1 : q;
    }
    return -1;
}

}  // namespace

Error parse(const char* line, const Spec* specs, int n, Value* values) {
    for (int i = 0; i < n; i++) values[i] = Value{};
    const char* p = line ? line : "";
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        const char* w = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        size_t wlen = size_t(p - w);
        const char* eqs = w;
        while (eqs < p && *eqs != '=') eqs++;
        if (eqs == p) return fail("boot option without '=value':", w, wlen);
        size_t klen = size_t(eqs - w);
        int idx = -1;
        for (int i = 0; i < n; i++)
            if (eq(w, klen, specs[i].key)) idx = i;
        if (idx < 0) return fail("unknown boot option", w, wlen);
        const Spec& s = specs[idx];
        Value& v = values[idx];
        const char* val = eqs + 1;
        size_t vlen = size_t(p - val);
        if (s.kind == Kind::kRest) {  // the value runs to the end of the line
            const char* end = val;
            while (*end) end++;
            while (end > val && (end[-1] == ' ' || end[-1] == '\t')) end--;
            vlen = size_t(end - val);
            p = val + vlen;
            while (*p) p++;
        }
        if (vlen == 0) return fail("boot option with an empty value:", w, wlen);
        if (vlen >= size_t(kMaxValue)) return fail("boot option value too long:", w, wlen);
        switch (s.kind) {
        case Kind::kUint: {
            uint64_t x = 0;
            for (size_t i = 0; i < vlen; i++) {
                if (val[i] < '0' || val[i] > '9') return fail("boot option needs a number:", w, wlen);
                if (x > (~0ull - 9) / 10) return fail("boot option number too large:", w, wlen);
                x = x * 10 + uint64_t(val[i] - '0');
            }
            if (x < s.min || x > s.max) {
                Error e{false, {}};
                format(e.message, sizeof e.message, "boot option '%.*s' out of range [%lu, %lu]",
                       int(wlen), w, s.min, s.max);
                return e;
            }
            v.num = x;
            break;
        }
        case Kind::kChoice: {
            int c = choice_index(s.choices, val, vlen);
            if (c < 0) {
                Error e{false, {}};
                format(e.message, sizeof e.message, "boot option '%.*s': choose one of %s",
                       int(wlen), w, s.choices);
                return e;
            }
            v.num = uint64_t(c);
            break;
        }
        case Kind::kString:
        case Kind::kRest:
            break;
        }
        for (size_t i = 0; i < vlen; i++) v.str[i] = val[i];
        v.str[vlen] = '\0';
        v.set = true;
    }
    return Error{true, {}};
}

}  // namespace bootopt
