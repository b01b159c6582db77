// hostlib/host_tsc.h: the host's TSC and wall clock, as the collector stamps its readings.
#pragma once
#include <x86intrin.h>

#include <cstdint>
#include <ctime>

namespace spinlab::collect {

// lfence first: the read is not hoisted above the loads before it (the clock sampler brackets
// a load of the guest's publication between two of these).
inline uint64_t host_tsc() {
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

inline uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

}  // namespace spinlab::collect
