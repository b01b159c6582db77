// channel/clock_area.cc: seqcount writer and reader over ClockArea.
#include "clock_area.h"

namespace spinlab {

bool clock_due(const ClockArea* area, uint64_t guest_tsc, uint64_t min_gap) {
    // A stale value only makes this CPU skip or publish once more. A last value ahead of ours
    // (TSCs of two CPUs a little apart) is no gap.
    uint64_t last = __atomic_load_n(&area->guest_tsc, __ATOMIC_RELAXED);
    return !(min_gap && __atomic_load_n(&area->count, __ATOMIC_RELAXED) && (guest_tsc < last || guest_tsc - last < min_gap));
}

bool clock_publish(ClockArea* area, uint64_t guest_tsc, uint32_t cpu, uint32_t period_us, uint64_t min_gap,
                   const ClockRef& ref) {
    uint64_t seq = __atomic_load_n(&area->seq, __ATOMIC_ACQUIRE);
    if (seq & 1) return false;  // another CPU is publishing
    if (!clock_due(area, guest_tsc, min_gap)) return false;  // read under the even seq just loaded
    // Odd seq first, taken with a compare-and-swap so that two CPUs never write at once; the
    // release fence orders it before the data stores.
    if (!__atomic_compare_exchange_n(&area->seq, &seq, seq + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return false;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&area->guest_tsc, guest_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&area->count, area->count + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&area->cpu, cpu, __ATOMIC_RELAXED);
    __atomic_store_n(&area->period_us, period_us, __ATOMIC_RELAXED);
    __atomic_store_n(&area->ref_ticks, ref.ticks, __ATOMIC_RELAXED);
    __atomic_store_n(&area->ref_guest_tsc, ref.guest_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&area->ref_period_fs, ref.period_fs, __ATOMIC_RELAXED);
    __atomic_store_n(&area->ref_source, uint32_t(ref.source), __ATOMIC_RELAXED);
    // Release: the data is visible before the even seq that validates it.
    __atomic_store_n(&area->seq, seq + 2, __ATOMIC_RELEASE);
    return true;
}

bool clock_try_read(const ClockArea* area, ClockReading* out) {
    uint64_t s1 = __atomic_load_n(&area->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) return false;
    ClockReading r;
    r.guest_tsc = __atomic_load_n(&area->guest_tsc, __ATOMIC_RELAXED);
    r.count = __atomic_load_n(&area->count, __ATOMIC_RELAXED);
    r.cpu = __atomic_load_n(&area->cpu, __ATOMIC_RELAXED);
    r.period_us = __atomic_load_n(&area->period_us, __ATOMIC_RELAXED);
    r.ref_ticks = __atomic_load_n(&area->ref_ticks, __ATOMIC_RELAXED);
    r.ref_guest_tsc = __atomic_load_n(&area->ref_guest_tsc, __ATOMIC_RELAXED);
    r.ref_period_fs = __atomic_load_n(&area->ref_period_fs, __ATOMIC_RELAXED);
    r.ref_source = __atomic_load_n(&area->ref_source, __ATOMIC_RELAXED);
    // Acquire fence: the data loads above complete before seq is loaded again.
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t s2 = __atomic_load_n(&area->seq, __ATOMIC_RELAXED);
    if (s1 != s2) return false;
    r.seq = s1;
    *out = r;
    return true;
}

}  // namespace spinlab
