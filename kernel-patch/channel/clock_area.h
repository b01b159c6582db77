// channel/clock_area.h: the guest's TSC publications in the shared region (spinlab/shm.h,
// ClockArea), written under a seqcount. Freestanding; the host's clock correlation reads them.
#pragma once
#include <spinlab/shm.h>
#include <stdint.h>

namespace spinlab {

// Guest, any CPU (every CPU's timer tick calls it, so the publications go on while any one vCPU
// is frozen or descheduled by the host). A writer takes `seq` from even to odd with a
// compare-and-swap; if another CPU holds it, or the last publication is less than `min_gap`
// cycles older than `guest_tsc`, this one is skipped (returns false). So about one CPU publishes
// per period, whichever ticks first. `guest_tsc` must be read immediately before the call: the
// host assumes the value was current when the publication became visible.
// A reference clock read beside the TSC (ClockArea::ref_*): guest_tsc was read just before
// ticks, and the publication's own guest_tsc just after.
struct ClockRef {
    uint64_t ticks = 0;
    uint64_t guest_tsc = 0;
    uint32_t period_fs = 0;
    ClockReference source = ClockReference::kNone;
};

bool clock_publish(ClockArea* area, uint64_t guest_tsc, uint32_t cpu, uint32_t period_us,
                   uint64_t min_gap = 0, const ClockRef& ref = {});

// Whether a publication with `guest_tsc` would keep `min_gap` (clock_publish's test), so that a
// CPU that would be skipped need not read the reference.
bool clock_due(const ClockArea* area, uint64_t guest_tsc, uint64_t min_gap);

struct ClockReading {
    uint64_t seq;        // even; changes with every publication
    uint64_t guest_tsc;
    uint64_t count;
    uint32_t cpu;
    uint32_t period_us;
    uint64_t ref_ticks = 0;      // ClockArea::ref_* as read (ref_source unchecked here)
    uint64_t ref_guest_tsc = 0;
    uint32_t ref_period_fs = 0;
    uint32_t ref_source = 0;
};

// Reader: one attempt. Returns false when a publication was in progress (retry), true with a
// consistent copy otherwise.
bool clock_try_read(const ClockArea* area, ClockReading* out);

}  // namespace spinlab
