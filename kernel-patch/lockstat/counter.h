// lockstat/counter.h: the per-CPU counter updates of perf data (perfdata.h's protocol).
//
// Each one is a single x86 instruction without a lock prefix, on a field only the owning CPU
// writes. A single instruction cannot be split by an interrupt on this CPU (so an interrupt
// handler that takes a spinlock in the middle of our record loses nothing), and an aligned
// 64-bit access is never torn for readers elsewhere. No lock prefix: no other CPU writes the
// field, so the bus lock (~20 cycles) would buy nothing.
#pragma once

#include <stdint.h>

namespace spinlab::lockstat {

// *c += v as one `add` to memory.
inline void counter_add(uint64_t* c, uint64_t v) {
    asm volatile("addq %1, %0" : "+m"(*c) : "er"(v) : "memory");
}

inline void counter_inc(uint64_t* c) {
    counter_add(c, 1);
}

// *c = max(*c, v). A cmpxchg without lock prefix is atomic against interrupts on this CPU;
// it only fails if an interrupt handler raised the maximum in between, then we look again.
inline void counter_max(uint64_t* c, uint64_t v) {
    uint64_t old = __atomic_load_n(c, __ATOMIC_RELAXED);
    while (v > old) {
        bool swapped;
        asm volatile("cmpxchgq %3, %1" : "+a"(old), "+m"(*c), "=@ccz"(swapped) : "r"(v) : "memory");
        if (swapped) return;
    }
}

// --*c == 0, as one `sub` to memory (sampling countdowns).
inline bool counter32_dec_is_zero(uint32_t* c) {
    bool zero;
    asm volatile("subl $1, %0" : "+m"(*c), "=@ccz"(zero)::"memory");
    return zero;
}

// Plain aligned loads and stores for readers and for initialisation.
inline uint64_t counter_read(const uint64_t* c) {
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}
inline void counter_set(uint64_t* c, uint64_t v) {
    __atomic_store_n(c, v, __ATOMIC_RELAXED);
}

}  // namespace spinlab::lockstat
