// lockstat/long_wait_ring.cc: see long_wait_ring.h.
#include "long_wait_ring.h"

namespace spinlab::lockstat {

uint32_t long_wait_snapshot(const LongWaitRing& r, LongWait* out, uint64_t* first_index) {
    LongWait copy[kLongWaitRingSize];
    const uint64_t h1 = __atomic_load_n(&r.head, __ATOMIC_ACQUIRE);
    for (uint32_t s = 0; s < kLongWaitRingSize; s++) {
        const LongWait& from = r.slots[s];
        copy[s].start_tsc = __atomic_load_n(&from.start_tsc, __ATOMIC_RELAXED);
        copy[s].wait_cycles = __atomic_load_n(&from.wait_cycles, __ATOMIC_RELAXED);
        copy[s].class_id = __atomic_load_n(&from.class_id, __ATOMIC_RELAXED);
        copy[s].holder_cpu = __atomic_load_n(&from.holder_cpu, __ATOMIC_RELAXED);
        copy[s].lhp_class = __atomic_load_n(&from.lhp_class, __ATOMIC_RELAXED);
        copy[s].waiter_cpu = __atomic_load_n(&from.waiter_cpu, __ATOMIC_RELAXED);
    }
    // The slot loads above must complete before head is read again (seqlock reader).
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const uint64_t h2 = __atomic_load_n(&r.head, __ATOMIC_RELAXED);
    const RingRange range = long_wait_valid_range(h1, h2 < h1 ? h1 : h2);
    uint32_t n = 0;
    for (uint64_t i = range.first; i < range.end; i++) out[n++] = copy[i & (kLongWaitRingSize - 1)];
    *first_index = range.first;
    return n;
}

}  // namespace spinlab::lockstat
