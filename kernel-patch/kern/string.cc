// kern/string.cc: the four functions the compiler may call on its own (GCC requires them
// even in a freestanding program).
#include <stddef.h>
#include <stdint.h>

extern "C" {

void* memset(void* d, int c, size_t n) {
    void* r = d;
    asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return r;
}

void* memcpy(void* d, const void* s, size_t n) {
    void* r = d;
    asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n)::"memory");
    return r;
}

void* memmove(void* d, const void* s, size_t n) {
    auto* dd = static_cast<uint8_t*>(d);
    auto* ss = static_cast<const uint8_t*>(s);
    if (dd < ss || dd >= ss + n) return memcpy(d, s, n);
    while (n--) dd[n] = ss[n];
    return d;
}

int memcmp(const void* a, const void* b, size_t n) {
    auto* x = static_cast<const uint8_t*>(a);
    auto* y = static_cast<const uint8_t*>(b);
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

}  // extern "C"
