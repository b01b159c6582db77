// channel/clock_area.h: the guest's TSC publications in the shared region (spinlab/shm.h,
// ClockArea), written under a seqcount. Freestanding; the host's clock correlation reads them.
#pragma once
#include <spinlab/shm.h>
#include <stdint.h>

namespace spinlab {

// Guest, one CPU at a time (the caller serialises publishers, e.g. only CPU 0's timer tick).
// `guest_tsc` must be read immediately before the call: the host assumes the value was current
// when the publication became visible.
void clock_publish(ClockArea* area, uint64_t guest_tsc, uint32_t cpu, uint32_t period_us);

struct ClockReading {
    uint64_t seq;        // even; changes with every publication
    uint64_t guest_tsc;
    uint64_t count;
    uint32_t cpu;
    uint32_t period_us;
};

// Reader: one attempt. Returns false when a publication was in progress (retry), true with a
// consistent copy otherwise.
bool clock_try_read(const ClockArea* area, ClockReading* out);

}  // namespace spinlab
