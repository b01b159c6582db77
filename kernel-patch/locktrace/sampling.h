// locktrace/sampling.h: which spinlock acquisitions become events (the three rules of
// Windows' spinlock tracing, evaluated at release), plus the unsampled long waits. Pure: the
// kernel calls it from spin_unlock; the host tests check every rule at and around its threshold.
//
//   (a) uncontended, and the SpinLockAcquireSampleRate-th uncontended one on this CPU
//   (b) contended with >= SpinLockSpinThreshold spins, and the SpinLockContentionSampleRate-th
//       such one on this CPU
//   (c) held for >= SpinLockHoldThreshold cycles (any acquisition; the hold was stamped)
//   long wait: contended, measured, wait >= long-wait= cycles; every one, no sampling
// (a)-(c) need the spinlock group, the long wait the long-wait group. The countdowns move
// only while their group is enabled, so "the Nth" counts acquisitions seen by the session.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "../lockstat/params.h"

namespace spinlab::locktrace {

// Per CPU, owned by the CPU (interrupts off while it decides). Zero means "reload first".
struct SampleCountdowns {
    uint32_t acquire;     // uncontended acquisitions left until rule (a) fires
    uint32_t contention;  // qualifying contended acquisitions left until rule (b) fires
};

// What the release knows about the hold that ends.
struct HoldFacts {
    bool contended;
    bool wait_overflow;    // the wait could not be measured (wait_cycles meaningless)
    bool hold_overflow;    // release stamp before acquire stamp
    uint64_t spins;        // >= 1 when contended
    uint64_t wait_cycles;
    uint64_t hold_cycles;
};

inline uint32_t param_spin_threshold(const lockstat::SpinlockParams& p) {
    return __atomic_load_n(&p.spin_threshold, __ATOMIC_RELAXED);
}
inline uint32_t param_contention_sample_rate(const lockstat::SpinlockParams& p) {
    return __atomic_load_n(&p.contention_sample_rate, __ATOMIC_RELAXED);
}

// Counts down; true (and reloaded with `rate`, 0 taken as 1) when it reaches the Nth.
inline bool countdown_fires(uint32_t& left, uint32_t rate) {
    if (left == 0 || left > rate) left = rate ? rate : 1;  // first use, or a lowered rate
    if (--left != 0) return false;
    left = rate ? rate : 1;
    return true;
}

// The kTraceRule* bits that fire for this release (0: no event).
inline uint8_t sample_release(SampleCountdowns& c, const lockstat::SpinlockParams& p,
                              uint32_t groups, uint64_t long_wait_threshold, const HoldFacts& f) {
    uint8_t rules = 0;
    if (groups & kTraceGroupSpinlock) {
        if (!f.contended) {
            if (countdown_fires(c.acquire, lockstat::param_acquire_sample_rate(p)))
                rules |= kTraceRuleAcquireSample;
        } else if (f.spins >= param_spin_threshold(p)) {
            if (countdown_fires(c.contention, param_contention_sample_rate(p)))
                rules |= kTraceRuleContention;
        }
        if (!f.hold_overflow && f.hold_cycles >= lockstat::param_hold_threshold(p))
            rules |= kTraceRuleHold;
    }
    if ((groups & kTraceGroupLongWait) && f.contended && !f.wait_overflow &&
        f.wait_cycles >= long_wait_threshold)
        rules |= kTraceRuleLongWait;
    return rules;
}

}  // namespace spinlab::locktrace
