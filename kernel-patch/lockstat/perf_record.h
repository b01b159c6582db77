// lockstat/perf_record.h: recording into, merging and resetting perf data (perfdata.h).
//
// The record_* functions run on the owning CPU inside spin_lock/spin_unlock, so they are
// inline, branch-light and use counter.h's single-instruction updates. Order inside a record
// does not matter to readers: they accept skew (perfdata.h), and the invariant
//     uncontended + sum(wait_hist) + wait_overflow == acquisitions
// holds again as soon as the record is complete.
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stddef.h>
#include <stdint.h>

#include "counter.h"
#include "log2_bucket.h"

namespace spinlab::lockstat {

// The owning CPU's init (the original experiment's ExpInitializeExecutive step): zero everything,
// stamp the header, set the first sampling countdown and say what `acquisitions` will count
// (spinlab's kernel: every acquisition; a probe of another kernel's slow path: contended only).
void init_cpu_perf(CpuPerfData& p, uint32_t cpu, uint32_t acquire_sample_rate,
                   AcquisitionsCounted counted = AcquisitionsCounted::kEveryAcquisition);

// An acquisition whose first attempt won: two increments, no timestamp.
inline void record_uncontended(LockClassPerf& c) {
    counter_inc(&c.acquisitions);
    counter_inc(&c.uncontended);
}

struct WaitRecord {
    uint64_t cycles;  // end - start, 0 when overflow
    bool overflow;    // the clock went backwards: counted in wait_overflow, not in a bucket
};

// A contended acquisition whose wait ran from `start` to `end` (clock values).
inline WaitRecord record_wait(LockClassPerf& c, uint64_t start, uint64_t end, LhpClass lhp) {
    const uint32_t l = static_cast<uint32_t>(lhp) < kLhpClassCount
                           ? static_cast<uint32_t>(lhp)
                           : static_cast<uint32_t>(LhpClass::kUnknown);
    counter_inc(&c.acquisitions);
    counter_inc(&c.lhp_count[l]);
    if (end < start) {
        counter_inc(&c.wait_overflow);
        return {0, true};
    }
    const uint64_t w = end - start;
    counter_inc(&c.wait_hist[log2_bucket(w)]);
    counter_add(&c.wait_cycles_sum, w);
    counter_max(&c.wait_cycles_max, w);
    counter_add(&c.lhp_cycles[l], w);
    return {w, false};
}

// A timed hold from `start` (acquisition) to `end` (release). Longer than hold_threshold
// cycles (SpinLockHoldThreshold) counts as a long hold.
inline void record_hold(LockClassPerf& c, uint64_t start, uint64_t end, uint64_t hold_threshold) {
    counter_inc(&c.holds_timed);
    if (end < start) {
        counter_inc(&c.hold_overflow);
        return;
    }
    const uint64_t h = end - start;
    counter_inc(&c.hold_hist[log2_bucket(h)]);
    counter_add(&c.hold_cycles_sum, h);
    counter_max(&c.hold_cycles_max, h);
    if (h > hold_threshold) counter_inc(&c.long_holds);
}

// Whether this uncontended acquisition's hold is timed: every `rate`-th one
// (SpinLockAcquireSampleRate). The countdown is per CPU; a new rate applies from the next
// reload. rate 0 is treated as 1 (the parameter's minimum forbids it anyway).
inline bool sample_uncontended_hold(CpuPerfData& p, uint32_t rate) {
    if (!counter32_dec_is_zero(&p.acquire_sample_countdown)) return false;
    __atomic_store_n(&p.acquire_sample_countdown, rate ? rate : 1u, __ATOMIC_RELAXED);
    return true;
}

// into += from: counts and histograms add, maxima take the larger. `from` may be live (read
// with plain loads, skew accepted); `into` must be private to the caller.
void merge_class_perf(LockClassPerf& into, const LockClassPerf& from);

// Zero one class, or every class and the pv lock's counters (lock_class == kAllLockClasses).
// Must run on the owning CPU with interrupts off, or while that CPU records nothing: a reset
// racing a record in flight would leave that record half counted.
void reset_class_perf(LockClassPerf& c);
void reset_cpu_perf(CpuPerfData& p, uint32_t lock_class);

uint64_t wait_hist_total(const LockClassPerf& c);
uint64_t hold_hist_total(const LockClassPerf& c);

// uncontended + sum(wait_hist) + wait_overflow == acquisitions (on a quiescent snapshot).
bool wait_invariant_holds(const LockClassPerf& c);

}  // namespace spinlab::lockstat
