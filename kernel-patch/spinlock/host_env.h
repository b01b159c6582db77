// spinlock/host_env.h: the environment (algorithms.h's Env) for running the lock algorithms on
// the host: in GoogleTest, where each std::thread plays a CPU, and in benchmarks. Host only (uses
// <thread>); the kernel has its own Env. lockstat/instrumented_host_env.h adds what the
// instrumentation layer calls (clock, counters, parameters, steal time, trace hooks).
#pragma once

#include <spinlab/sysinfo.h>
#include <stdint.h>

#include <thread>

#include "algorithms.h"

namespace spinlab::spinlock {

// One per thread ("CPU").
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
};

}  // namespace spinlab::spinlock
