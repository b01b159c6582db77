// kern/params_page.h: the live spinlock-tracing parameters (SpinLockSpinThreshold,
// SpinLockAcquireSampleRate, SpinLockContentionSampleRate, SpinLockHoldThreshold) in a page of
// their own, so that they can be published to ring 3 as they are.
//
// Contract: g_spinlock_params is the one live copy. The boot options set it, the set call
// (sysinfo, from the host's `spinlab-collect set` or a guest's system call) changes it in place,
// and the kernel's locks read it at every release (lockstat/params.h: whole aligned words,
// relaxed). kSysMapLockstat maps its page read-only into a workload (LockstatMapping::
// params_base, at kParamsPageUser), whose ring-3 locks then read the very same words: a set
// reaches the kernel's locks and lockbench's at their next release, with no copy to refresh.
// Nothing else lives in the page, so mapping it shows ring 3 nothing but the four values.
#pragma once

#include <spinlab/syscall.h>
#include <stddef.h>
#include <stdint.h>

#include "../lockstat/params.h"

struct alignas(4096) SpinlockParamsPage : spinlab::lockstat::SpinlockParams {
    using SpinlockParams::operator=;  // g_spinlock_params = boot values
};
static_assert(sizeof(SpinlockParamsPage) == 4096, "the parameters' page holds nothing else");
static_assert(sizeof(spinlab::lockstat::SpinlockParams) == 16 &&
                  offsetof(spinlab::lockstat::SpinlockParams, acquire_sample_rate) == 4 &&
                  offsetof(spinlab::lockstat::SpinlockParams, contention_sample_rate) == 8 &&
                  offsetof(spinlab::lockstat::SpinlockParams, hold_threshold) == 12,
              "LockstatMapping::params_base's layout");

extern SpinlockParamsPage g_spinlock_params;

// Where kSysMapLockstat maps the page in a workload: the page below the counters.
constexpr uint64_t kParamsPageUser = spinlab::kUserLockstatBase - 4096;
