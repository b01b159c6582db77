// lockstat/params.cc: see params.h.
#include "params.h"

#include <stddef.h>

namespace spinlab::lockstat {

const SpinlockParamInfo kSpinlockParamInfo[kSpinlockParamCount] = {
    {"SpinLockSpinThreshold", offsetof(EventTraceSpinlockInformation, spin_threshold),
     kMinSpinThreshold},
    {"SpinLockAcquireSampleRate", offsetof(EventTraceSpinlockInformation, acquire_sample_rate),
     kMinAcquireSampleRate},
    {"SpinLockContentionSampleRate",
     offsetof(EventTraceSpinlockInformation, contention_sample_rate), kMinContentionSampleRate},
    {"SpinLockHoldThreshold", offsetof(EventTraceSpinlockInformation, hold_threshold),
     kMinHoldThreshold},
};

namespace {
uint32_t field_at(const EventTraceSpinlockInformation& in, uint32_t offset) {
    uint32_t v;
    __builtin_memcpy(&v, reinterpret_cast<const char*>(&in) + offset, sizeof v);
    return v;
}
}  // namespace

const SpinlockParamInfo* first_invalid_param(const EventTraceSpinlockInformation& in) {
    for (const SpinlockParamInfo& p : kSpinlockParamInfo)
        if (field_at(in, p.offset) < p.minimum) return &p;
    return nullptr;
}

Status set_spinlock_params(SpinlockParams& live, const EventTraceSpinlockInformation& in) {
    if (in.event_trace_information_class !=
        static_cast<uint32_t>(EventTraceInformationClass::kEventTraceSpinlockInformation))
        return Status::kInvalidParameter;
    if (first_invalid_param(in) != nullptr) return Status::kInvalidParameter;
    __atomic_store_n(&live.spin_threshold, in.spin_threshold, __ATOMIC_RELAXED);
    __atomic_store_n(&live.acquire_sample_rate, in.acquire_sample_rate, __ATOMIC_RELAXED);
    __atomic_store_n(&live.contention_sample_rate, in.contention_sample_rate, __ATOMIC_RELAXED);
    __atomic_store_n(&live.hold_threshold, in.hold_threshold, __ATOMIC_RELAXED);
    return Status::kSuccess;
}

EventTraceSpinlockInformation query_spinlock_params(const SpinlockParams& live) {
    EventTraceSpinlockInformation out;
    out.event_trace_information_class =
        static_cast<uint32_t>(EventTraceInformationClass::kEventTraceSpinlockInformation);
    out.spin_threshold = __atomic_load_n(&live.spin_threshold, __ATOMIC_RELAXED);
    out.acquire_sample_rate = __atomic_load_n(&live.acquire_sample_rate, __ATOMIC_RELAXED);
    out.contention_sample_rate = __atomic_load_n(&live.contention_sample_rate, __ATOMIC_RELAXED);
    out.hold_threshold = __atomic_load_n(&live.hold_threshold, __ATOMIC_RELAXED);
    return out;
}

}  // namespace spinlab::lockstat
