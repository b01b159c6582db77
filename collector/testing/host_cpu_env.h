// collector/testing/host_cpu_env.h: the lock environment (spinlock/algorithms.h and
// lockstat/instrumented_lock.h) for a host thread that plays one guest CPU in the fake guest.
// Each thread owns one CpuPerfData in the shared region, exactly as a guest CPU does.
#pragma once
#include <sched.h>
#include <x86intrin.h>

#include <cstdint>

#include "lockstat/clock.h"
#include "lockstat/lhp.h"
#include "lockstat/params.h"
#include "spinlock/lock.h"
#include "spinlock/preemptable_ticket_lock.h"

namespace spinlab::testing {

struct HostCpuEnv {
    uint32_t cpu_number;
    LockAlgorithm algo;
    CpuPerfData* perf_data;
    const lockstat::SpinlockParams* live;

    LockAlgorithm algorithm() const { return algo; }
    uint32_t cpu() const { return cpu_number; }
    void relax() { _mm_pause(); }
    uint32_t pv_spin_bound() const { return 128; }
    // No hypercall on the host: give the host CPU away, the nearest analogue of a PV yield.
    void yield_to(uint32_t) { sched_yield(); }
    void spin_check(const spinlock::Lock&, uint64_t) {}
    uint32_t pticket_timeout_unit() const { return spinlock::kPticketTimeoutUnit; }
    // Nobody tells a host thread whether another was descheduled: pvmcs spins as mcs does.
    bool vcpu_is_off(uint32_t) const { return false; }
    uint64_t now() { return lockstat::LfenceRdtsc::now(); }
    CpuPerfData* perf() { return perf_data; }
    const lockstat::SpinlockParams& params() { return *live; }
    // Like TCG: no steal time, so every contended wait is classed unknown.
    lockstat::StealSample steal(uint32_t) { return {0, 0, 0}; }
    // Host threads have no interrupts to mask; the ring push is per-thread anyway.
    uint64_t irq_save() { return 0; }
    void irq_restore(uint64_t) {}
};

}  // namespace spinlab::testing
