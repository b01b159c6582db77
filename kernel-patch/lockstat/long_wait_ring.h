// lockstat/long_wait_ring.h: the per-CPU ring of recent long waits (perfdata.h's protocol):
// the owning CPU pushes, anyone reads a consistent snapshot without stopping the writer.
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

namespace spinlab::lockstat {

// Owning CPU only, interrupts off (an interrupt handler pushing in between would reuse
// the slot). Writes the slot, then publishes it by advancing head with a release store.
inline void long_wait_push(LongWaitRing& r, const LongWait& w) {
    const uint64_t i = __atomic_load_n(&r.head, __ATOMIC_RELAXED);
    LongWait& slot = r.slots[i & (kLongWaitRingSize - 1)];
    __atomic_store_n(&slot.start_tsc, w.start_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.wait_cycles, w.wait_cycles, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.class_id, w.class_id, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.holder_cpu, w.holder_cpu, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.lhp_class, w.lhp_class, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.waiter_cpu, w.waiter_cpu, __ATOMIC_RELAXED);
    __atomic_store_n(&r.head, i + 1, __ATOMIC_RELEASE);
}

// The entries that were consistent for a reader that saw head h1 before copying the slots
// and h2 after: [first, h1). The writer may have been filling entry h2 (slot of h2 - N).
struct RingRange {
    uint64_t first;
    uint64_t end;  // h1
};
constexpr RingRange long_wait_valid_range(uint64_t h1, uint64_t h2) {
    uint64_t first = h1 > kLongWaitRingSize ? h1 - kLongWaitRingSize : 0;
    if (h2 + 1 > kLongWaitRingSize && h2 + 1 - kLongWaitRingSize > first)
        first = h2 + 1 - kLongWaitRingSize;
    if (first > h1) first = h1;
    return {first, h1};
}

// Any CPU (or the host): copy the consistent entries, oldest first, into out[0..N).
// Returns how many; *first_index is the ring index of out[0].
uint32_t long_wait_snapshot(const LongWaitRing& r, LongWait* out, uint64_t* first_index);

}  // namespace spinlab::lockstat
