// collector/clock_reference.h: clock samples placed through the guest's reference clock.
//
// Under TCG the guest's TSC is the host's plus an offset that QEMU moves in steps, at the rate
// two vCPUs read it (issue 52; docs/measurements.md). A host that watches publications can
// only follow those steps by spinning at every one, which takes a host CPU from the vCPUs it
// measures. But each publication can also carry a clock QEMU leaves alone: the HPET's counter,
// QEMU's virtual clock, which is the host's CLOCK_MONOTONIC plus an offset fixed while the VM
// runs. The guest reads TSC, HPET, TSC (spinlab/shm.h, ClockArea::ref_*); the host reads each
// publication at leisure (a few times a period, never spinning) and its own CLOCK_MONOTONIC
// beside its TSC. Then:
//   1. calibrate: the HPET's offset from CLOCK_MONOTONIC is one constant. Each publication the
//      sampler also bracketed (host TSC before and after it became visible) bounds it: the
//      HPET was read at host TSC in [host_before - d, host_after], d = guest_tsc -
//      ref_guest_tsc (the guest's TSC only gains on the host's, so d is at least the host time
//      between the reads). The constant lies in every such interval: the largest lower end is
//      a bound that always holds (causality); an upper end is too low only for a publication
//      that became visible late (its vCPU descheduled or frozen between its TSC read and its
//      store). Those below the lower bound are surely late and left out; of the rest the upper
//      end taken is a low quantile (kLateShare), not the least. Most of them below it would
//      mean the host's own clocks disagree: then nothing is calibrated.
//   2. place: every publication with a reference becomes a ClockSample whose "bracket" is the
//      host TSC range of its guest_tsc: [H - e, H + d + e], H the HPET reading mapped to the
//      host's TSC, e the calibration's half width plus the host clock pairs' and one HPET tick.
// The fit (clock_sync.h) then takes these samples instead of the bracketed ones, unchanged: the
// bracketed ones only calibrate, since a bracket's lower end assumes the publication's store
// came right after its TSC read, and a placed sample assumes nothing of the kind.
// Pure: tested on synthetic data.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "clock_sync.h"

namespace spinlab::collect {

// One publication that carried a reference, as read.
struct RefReading {
    uint64_t ref_guest_tsc;  // guest TSC just before the reference
    uint64_t guest_tsc;      // guest TSC just after it (the publication's)
    uint64_t ref_ticks;
    uint32_t ref_period_fs;
};

// The host's CLOCK_MONOTONIC read between two host TSC reads.
struct HostClockPair {
    uint64_t tsc_before;
    int64_t mono_ns;
    uint64_t tsc_after;
};

// A publication the sampler bracketed, with the reference it carried.
struct BracketedRef {
    ClockSample bracket;
    RefReading ref;
};

struct RefCalibration {
    bool ok = false;
    std::string why_not;        // when not ok: what was missing or disagreed
    double lo_ns = 0, hi_ns = 0;  // the reference's time minus CLOCK_MONOTONIC lies in [lo, hi]
    size_t used = 0;            // bracketed publications that bounded it
    size_t below_lower = 0;     // upper ends below the lower bound: late publications, left out
    double half_width_ns() const { return (hi_ns - lo_ns) / 2; }
};

// A low quantile, not the least: up to this share of the bracketed publications above the lower
// bound may still be a little late.
constexpr double kLateShare = 0.05;

// Host TSC <-> CLOCK_MONOTONIC through the pairs (sorted, at least 2), linear between them.
class HostClock {
public:
    explicit HostClock(std::vector<HostClockPair> pairs);
    bool ok() const { return pairs_.size() >= 2; }
    double mono_of(double tsc) const;
    double tsc_of(double mono_ns) const;
    double cycles_per_ns() const;  // over all the pairs
    double error_cycles() const { return err_cycles_; }  // the widest pair's half width
    double error_ns() const { return err_ns_; }

private:
    std::vector<HostClockPair> pairs_;
    double err_cycles_ = 0, err_ns_ = 0;
};

RefCalibration calibrate_reference(std::span<const BracketedRef> bracketed, const HostClock& host);

// Every reading as a ClockSample (see above); none when the calibration is not ok.
std::vector<ClockSample> reference_samples(std::span<const RefReading> readings, const RefCalibration& cal,
                                           const HostClock& host);

}  // namespace spinlab::collect
