// locktrace/bench_clock.h: the host benchmarks' clocks (host only, like test_area.h): the TSC's
// rate against the steady clock, measured once, to turn on-CPU time into TSC cycles; and this
// thread's on-CPU time.
#pragma once

#include <stdint.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "../lockstat/clock.h"

namespace spinlab::locktrace::testing {

// TSC ticks per second, against the steady clock over 100 ms, once per process.
inline double tsc_hz() {
    static const double hz = [] {
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t c0 = lockstat::LfenceRdtsc::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const uint64_t c1 = lockstat::LfenceRdtsc::now();
        return double(c1 - c0) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }();
    return hz;
}

// On-CPU time of this thread, ns.
inline uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

}  // namespace spinlab::locktrace::testing
