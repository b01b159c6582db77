#include "host_clock.h"

#include <time.h>

#include "fs_util.h"

namespace spinlab::load {

namespace {
uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

ClockPair sample_clock_pair(clockid_t clock) {
    ClockPair best{};
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; ++i) {
        uint64_t before = clock_ns(clock);
        uint64_t tsc = read_tsc();
        uint64_t after = clock_ns(clock);
        if (after - before < best_gap) {
            best_gap = after - before;
            best = {before + (after - before) / 2, tsc};
        }
    }
    return best;
}

TscMap::TscMap(ClockPair a, ClockPair b) : a_(a) {
    if (b.tsc <= a.tsc || b.mono_ns <= a.mono_ns) {
        throw LoadError("clock pairs for the TSC map must increase in both clocks");
    }
    ticks_per_ns_ = static_cast<double>(b.tsc - a.tsc) / static_cast<double>(b.mono_ns - a.mono_ns);
}

uint64_t TscMap::to_ns(uint64_t tsc) const {
    double delta = (static_cast<double>(tsc) - static_cast<double>(a_.tsc)) / ticks_per_ns_;
    return static_cast<uint64_t>(static_cast<double>(a_.mono_ns) + delta);
}

}  // namespace spinlab::load

namespace spinlab::load {

uint64_t TscMap::to_tsc(uint64_t ns) const {
    double delta = (static_cast<double>(ns) - static_cast<double>(a_.mono_ns)) * ticks_per_ns_;
    return static_cast<uint64_t>(static_cast<double>(a_.tsc) + delta);
}

}  // namespace spinlab::load
