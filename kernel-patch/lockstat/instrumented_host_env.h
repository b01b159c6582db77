// lockstat/instrumented_host_env.h: the host environment of the instrumented lock
// (instrumented_lock.h's Env): spinlock/host_env.h's HostEnv, which runs the algorithms on host
// threads, plus the clock, per-CPU counters, live parameters, steal time and trace hooks the
// instrumentation calls. For GoogleTest and the benchmarks; host only.
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

#include "../spinlock/host_env.h"
#include "clock.h"
#include "lhp.h"
#include "params.h"

namespace spinlab::lockstat {

// One per thread ("CPU"). Clock is a lockstat clock policy, or any type with static now().
template <class Clock = LfenceRdtsc>
struct InstrumentedHostEnv : spinlock::HostEnv {
    CpuPerfData* perf_data = nullptr;
    SpinlockParams* live_params = nullptr;

    uint64_t now() { return Clock::now(); }
    CpuPerfData* perf() { return perf_data; }
    const SpinlockParams& params() { return *live_params; }
    // No steal time on the host, unless a test scripts it (steal_fn: that CPU's sample now).
    StealSample (*steal_fn)(uint32_t cpu) = nullptr;
    StealSample steal(uint32_t cpu) { return steal_fn ? steal_fn(cpu) : StealSample{0, 0, 0}; }
    uint64_t irq_save() { return 0; }
    void irq_restore(uint64_t) {}

    // locktrace's hooks (instrumented_lock.h): tracing while trace_fn is set.
    void (*trace_fn)(void* arg, const spinlock::Lock& l, uint64_t release_tsc) = nullptr;
    void* trace_arg = nullptr;
    bool tracing() const { return trace_fn != nullptr; }
    void trace_release(const spinlock::Lock& l, uint64_t release_tsc) { trace_fn(trace_arg, l, release_tsc); }
};

}  // namespace spinlab::lockstat
