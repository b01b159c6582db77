// spinlock/host_env.h: the environment (algorithms.h's Env, plus lockstat's additions) for
// running the kernel's lock code on the host: in GoogleTest, where each std::thread plays a
// CPU, and in the benchmark. Host only (uses <thread>); the kernel has its own Env.
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

#include <atomic>
#include <thread>

#include "../lockstat/clock.h"
#include "../lockstat/lhp.h"
#include "../lockstat/params.h"
#include "algorithms.h"

namespace spinlab::spinlock {

// One per thread ("CPU"). Clock is a lockstat clock policy, or any type with static now().
template <class Clock = lockstat::LfenceRdtsc>
struct HostEnv {
    LockAlgorithm algo = LockAlgorithm::kTestAndSet;
    uint32_t cpu_id = 0;
    bool pause = true;
    // More threads than host cores: a waiter that spins on while the holder's thread is
    // descheduled burns its whole time slice (host-side lock-holder preemption). Giving the
    // host CPU away every yield_every spins keeps the tests fast; 0 never yields.
    uint32_t yield_every = 0;
    uint32_t pv_bound = 64;
    uint32_t pticket_unit = kPticketTimeoutUnit;
    // Scripting for tests: which vCPUs count as preempted (preempted_fn(script_arg, cpu); none
    // when null), and what the rest of the machine does while this CPU waits (on_spin, called
    // at every relax() and yield_to(): release a lock, bring a vCPU back...).
    bool (*preempted_fn)(void* arg, uint32_t cpu) = nullptr;
    void (*on_spin)(void* arg) = nullptr;
    void* script_arg = nullptr;
    CpuPerfData* perf_data = nullptr;
    lockstat::SpinlockParams* live_params = nullptr;
    // Observations for tests.
    uint64_t yields = 0;       // yield_to() calls
    uint64_t spin_checks = 0;  // spin_check() calls
    uint32_t first_yield_target = kNoCpu;
    uint32_t last_yield_target = kNoCpu;
    uint32_t relax_count = 0;
    uint64_t preempted_checks = 0;  // vcpu_is_preempted() calls

    LockAlgorithm algorithm() const { return algo; }
    uint32_t cpu() const { return cpu_id; }
    void relax() {
        if (pause) cpu_pause();
        if (yield_every && ++relax_count % yield_every == 0) std::this_thread::yield();
        if (on_spin) on_spin(script_arg);
    }
    uint32_t pv_spin_bound() const { return pv_bound; }
    void yield_to(uint32_t holder) {
        if (yields++ == 0) first_yield_target = holder;
        last_yield_target = holder;
        std::this_thread::yield();
        if (on_spin) on_spin(script_arg);
    }
    void spin_check(const Lock&, uint64_t) { spin_checks++; }
    uint32_t pticket_timeout_unit() const { return pticket_unit; }
    bool vcpu_is_preempted(uint32_t cpu) {
        preempted_checks++;
        return preempted_fn != nullptr && cpu != kNoCpu && preempted_fn(script_arg, cpu);
    }

    uint64_t now() { return Clock::now(); }
    CpuPerfData* perf() { return perf_data; }
    const lockstat::SpinlockParams& params() { return *live_params; }
    // No steal time on the host, unless a test scripts it (steal_fn: that CPU's sample now).
    lockstat::StealSample (*steal_fn)(uint32_t cpu) = nullptr;
    lockstat::StealSample steal(uint32_t cpu) { return steal_fn ? steal_fn(cpu) : lockstat::StealSample{0, 0, 0}; }
    uint64_t irq_save() { return 0; }
    void irq_restore(uint64_t) {}

    // locktrace's hooks (instrumented_lock.h): tracing while trace_fn is set.
    void (*trace_fn)(void* arg, const Lock& l, uint64_t release_tsc) = nullptr;
    void* trace_arg = nullptr;
    bool tracing() const { return trace_fn != nullptr; }
    void trace_release(const Lock& l, uint64_t release_tsc) { trace_fn(trace_arg, l, release_tsc); }
};

}  // namespace spinlab::spinlock
