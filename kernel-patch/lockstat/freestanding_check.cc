// lockstat/freestanding_check.cc: instantiates the lock paths at every level with a minimal
// kernel-like environment, compiled only with the kernel's flags (host.cmake), so template
// code that would not build in the kernel fails the host build too. Never linked.
#include "../spinlock/algorithms.h"
#include "build_level.h"
#include "clock.h"
#include "halt_log.h"
#include "instrumented_lock.h"

namespace spinlab::lockstat {
namespace {

struct KernelLikeEnv {
    LockAlgorithm algorithm() { return LockAlgorithm::kQueued; }
    uint32_t cpu() { return 0; }
    void relax() { spinlock::cpu_pause(); }
    uint32_t pv_spin_bound() { return 128; }
    void yield_to(uint32_t) {}
    void spin_check(const spinlock::Lock&, uint64_t) {}
    uint32_t pticket_timeout_unit() { return spinlock::kPticketTimeoutUnit; }
    bool vcpu_is_off(uint32_t) { return false; }
    uint64_t now() { return read_clock(ClockSource::kLfenceRdtsc); }
    CpuPerfData* perf() { return perf_data; }
    const SpinlockParams& params() { return *live; }
    StealSample steal(uint32_t) { return {0, 0, 0}; }
    uint64_t irq_save() { return 0; }
    void irq_restore(uint64_t) {}
    CpuPerfData* perf_data;
    SpinlockParams* live;
};

}  // namespace

void freestanding_check_all_levels(spinlock::Lock& l, spinlock::McsNode* n, CpuPerfData* p,
                                   SpinlockParams* params);
void freestanding_check_all_levels(spinlock::Lock& l, spinlock::McsNode* n, CpuPerfData* p,
                                   SpinlockParams* params) {
    KernelLikeEnv env{p, params};
    lock_acquire<InstrumentLevel::kOff>(l, n, env);
    lock_release<InstrumentLevel::kOff>(l, env);
    lock_acquire<InstrumentLevel::kCounters>(l, n, env);
    lock_release<InstrumentLevel::kCounters>(l, env);
    lock_acquire<InstrumentLevel::kFull>(l, n, env);
    lock_release<InstrumentLevel::kFull>(l, env);
    lock_acquire<kBuildLevel>(l, n, env);
    lock_release<kBuildLevel>(l, env);
    // The halt log's writer and reader (kern/lockstat.h's glue calls them in the kernel).
    const uint64_t e = halt_log_enter(p->halts, env.now());
    halt_log_exit(p->halts, e, env.now());
    halt_log_abandon(p->halts, halt_log_enter(p->halts, env.now()));
    HaltSpan out[4];
    (void)halt_log_read(p->halts, 0, out, 4);
}

}  // namespace spinlab::lockstat
