// lockstat/params.h: the four spinlock-tracing parameters of EVENT_TRACE_SPINLOCK_INFORMATION
// (Windows' names): their minimums (which are also the defaults), validation and the live copy.
//
// The live copy is read by every CPU inside its lock paths and written by the set call on
// one CPU: each field is one aligned 32-bit word, stored and loaded whole (relaxed). A set
// changes the four fields one after another, so a reader may briefly combine old and new
// values; each value it sees is valid, because the set validated all of them first.
#pragma once

#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

namespace spinlab::lockstat {

struct SpinlockParams {
    uint32_t spin_threshold;          // SpinLockSpinThreshold
    uint32_t acquire_sample_rate;     // SpinLockAcquireSampleRate
    uint32_t contention_sample_rate;  // SpinLockContentionSampleRate
    uint32_t hold_threshold;          // SpinLockHoldThreshold
};

constexpr SpinlockParams kDefaultSpinlockParams = {kMinSpinThreshold, kMinAcquireSampleRate,
                                                   kMinContentionSampleRate, kMinHoldThreshold};

// One parameter's Windows name, position in EventTraceSpinlockInformation and minimum; the
// collector prints these when a set is refused ("SpinLockHoldThreshold must be >= 1000000").
struct SpinlockParamInfo {
    const char* name;
    uint32_t offset;
    uint32_t minimum;
};
constexpr uint32_t kSpinlockParamCount = 4;
extern const SpinlockParamInfo kSpinlockParamInfo[kSpinlockParamCount];

// The first parameter below its minimum, or null when all are permitted.
const SpinlockParamInfo* first_invalid_param(const EventTraceSpinlockInformation& in);

// All or nothing: kInvalidParameter (live unchanged) if the sub-class is not
// kEventTraceSpinlockInformation or any field is below its minimum; else stores all four.
Status set_spinlock_params(SpinlockParams& live, const EventTraceSpinlockInformation& in);

// The live values as the query answer (sub-class field filled in).
EventTraceSpinlockInformation query_spinlock_params(const SpinlockParams& live);

// Whole-field reads for the lock paths.
inline uint32_t param_acquire_sample_rate(const SpinlockParams& p) {
    return __atomic_load_n(&p.acquire_sample_rate, __ATOMIC_RELAXED);
}
inline uint32_t param_hold_threshold(const SpinlockParams& p) {
    return __atomic_load_n(&p.hold_threshold, __ATOMIC_RELAXED);
}

}  // namespace spinlab::lockstat
