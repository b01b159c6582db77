// lib/argpack.cc: see argpack.h.
#include "argpack.h"

bool argpack(const char* const* argv, int argc, uint64_t stack_top, uint8_t* buf, size_t size,
             ArgPack* out) {
    if (argc < 0) return false;
    uint64_t base = stack_top - size;
    uint64_t sp = stack_top;
    uint64_t ptrs[64];
    if (argc > 64) return false;
    for (int i = argc - 1; i >= 0; i--) {
        size_t n = 0;
        while (argv[i][n]) n++;
        if (sp - base < n + 1) return false;
        sp -= n + 1;
        for (size_t k = 0; k <= n; k++) buf[sp - base + k] = uint8_t(argv[i][k]);
        ptrs[i] = sp;
    }
    sp &= ~uint64_t(15);
    size_t array = (size_t(argc) + 1) * 8;
    if (sp - base < array + 16) return false;
    sp -= array;
    sp &= ~uint64_t(15);
    for (int i = 0; i <= argc; i++) {
        uint64_t v = i < argc ? ptrs[i] : 0;
        for (int b = 0; b < 8; b++) buf[sp - base + size_t(i) * 8 + size_t(b)] = uint8_t(v >> (8 * b));
    }
    out->rsp = sp;
    out->argv = sp;
    out->used = size_t(stack_top - sp);
    return true;
}
