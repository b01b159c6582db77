// The two host clocks every record carries: CLOCK_MONOTONIC in ns (what the scheduler and
// timers use) and the TSC (what the guest counters and the x86-tsc trace clock use), and a
// linear map between them built from paired samples, so either can be converted.
#pragma once

#include <time.h>

#include <cstdint>

#include "hostlib/host_tsc.h"

namespace spinlab::load {

uint64_t monotonic_ns();
// The host TSC, read the one way every host tool reads it (collector/host_tsc.h).
inline uint64_t read_tsc() { return collect::host_tsc(); }

struct ClockPair {
    uint64_t mono_ns;  // CLOCK_MONOTONIC, or the clock sample_clock_pair was asked for
    uint64_t tsc;
};
// Samples both clocks back to back; the TSC is read between two clock reads and paired with
// their midpoint, the tightest pair of the few tries (the gap bounds the pairing error).
// `clock`: CLOCK_MONOTONIC, or CLOCK_MONOTONIC_RAW for perf's records (switch_records.h).
ClockPair sample_clock_pair(clockid_t clock = CLOCK_MONOTONIC);

// tsc -> ns through two pairs taken some time apart. Must hold: b.tsc > a.tsc.
class TscMap {
public:
    TscMap(ClockPair a, ClockPair b);
    uint64_t to_ns(uint64_t tsc) const;
    uint64_t to_tsc(uint64_t ns) const;
    double ticks_per_ns() const { return ticks_per_ns_; }

private:
    ClockPair a_;
    double ticks_per_ns_;
};

}  // namespace spinlab::load
