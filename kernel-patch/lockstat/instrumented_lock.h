// lockstat/instrumented_lock.h: the instrumentation layer over spinlock/, as Zircon's
// instrumented spinlock does it: try once; only on failure build a WaitTracer that stamps
// the clock, run the plain slow path, and record the wait when the lock is taken. The level
// is a template parameter, so InstrumentLevel::kOff compiles every line of it away (no #ifdef
// in the lock paths) and the spin loops themselves never contain statistics code.
//
//   level      uncontended acquisition          contended acquisition        release
//   kOff       try                              try, spin                    release
//   kCounters  try, 2 increments                try, stamp, spin, stamp,     release
//                                               record wait + LHP class
//   kFull      as kCounters, + every Nth        as kCounters, + hold starts  if the hold was
//              (SpinLockAcquireSampleRate)      at the end stamp             stamped: stamp,
//              one stamps the hold start                                     record hold
//
// The Env is spinlock.h's, plus:
//   uint64_t now();                        the boot-selected clock (clock.h)
//   CpuPerfData* perf();                   this CPU's perf data; never null (early boot: a
//                                          scratch block, not the null check on every lock)
//   const lockstat::SpinlockParams& params();   the live parameters
//   StealSample steal(uint32_t cpu);       that CPU's kvm_steal_time now; valid = 0 when it
//                                          has none (TCG, not registered, cpu == kNoCpu)
//   uint64_t irq_save(); void irq_restore(uint64_t);   around the long-wait ring push only
//
// The caller must not migrate between acquire and release (perf() is the releasing CPU's,
// which must be the acquiring one): the kernel wrapper disables preemption or interrupts.
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

#include "../spinlock/spinlock.h"
#include "lhp.h"
#include "long_wait_ring.h"
#include "params.h"
#include "perf_record.h"

namespace spinlab::lockstat {

// Stamps and steal samples of one contended acquisition, on the waiter's stack.
template <InstrumentLevel L, class Env>
class WaitTracer {
  public:
    WaitTracer(const spinlock::Lock& l, Env& env)
        : holder_(spinlock::load_relaxed(&l.holder_cpu)), self_(env.cpu()) {
        holder_before_ = holder_steal(env);
        self_before_ = env.steal(self_);
        start_ = env.now();
    }

    // The lock has just been taken: stamp, classify, record.
    void acquired(spinlock::Lock& l, Env& env) {
        const uint64_t end = env.now();
        const LhpClass lhp =
            classify_wait(holder_before_, holder_steal(env), self_before_, env.steal(self_));
        CpuPerfData& p = *env.perf();
        const WaitRecord w = record_wait(p.classes[l.class_id], start_, end, lhp);
        if (!w.overflow && w.cycles >= p.long_waits.threshold_cycles) {
            const uint64_t flags = env.irq_save();
            long_wait_push(p.long_waits, {start_, w.cycles, l.class_id, holder_,
                                          static_cast<uint32_t>(lhp), self_});
            env.irq_restore(flags);
        }
        if constexpr (L == InstrumentLevel::kFull) {
            // Every contended acquisition's hold is timed, from the stamp we already have.
            l.hold_start = end;
            l.hold_timed = 1;
        }
    }

  private:
    // A lock released between our failed try and this read has no holder to blame: count
    // the holder as not preempted (valid when our own steal time is), rather than unknown.
    StealSample holder_steal(Env& env) {
        if (holder_ != kNoCpu) return env.steal(holder_);
        StealSample none = env.steal(self_);
        none.steal_ns = 0;
        none.preempted = 0;
        return none;
    }

    uint32_t holder_;
    uint32_t self_;
    StealSample holder_before_;
    StealSample self_before_;
    uint64_t start_;
};

// The level that vanishes.
template <class Env>
class WaitTracer<InstrumentLevel::kOff, Env> {
  public:
    constexpr WaitTracer(const spinlock::Lock&, Env&) {}
    constexpr void acquired(spinlock::Lock&, Env&) {}
};

template <InstrumentLevel L, class Env>
inline void note_uncontended(spinlock::Lock& l, Env& env) {
    if constexpr (L != InstrumentLevel::kOff) {
        CpuPerfData& p = *env.perf();
        record_uncontended(p.classes[l.class_id]);
        if constexpr (L == InstrumentLevel::kFull) {
            if (sample_uncontended_hold(p, param_acquire_sample_rate(env.params()))) [[unlikely]] {
                l.hold_start = env.now();
                l.hold_timed = 1;
            }
        }
    }
}

// spin_lock's core. node: this CPU's queue node for the current nesting level (queued lock).
template <InstrumentLevel L, class Env>
inline void lock_acquire(spinlock::Lock& l, spinlock::McsNode* node, Env& env) {
    if (spinlock::try_acquire(l, node, env)) [[likely]] {
        note_uncontended<L>(l, env);
        return;
    }
    WaitTracer<L, Env> tracer(l, env);
    spinlock::acquire_contended(l, node, env);
    tracer.acquired(l, env);
}

// spin_unlock's core: close a timed hold (full level), then release.
template <InstrumentLevel L, class Env>
inline void lock_release(spinlock::Lock& l, Env& env) {
    if constexpr (L == InstrumentLevel::kFull) {
        if (l.hold_timed) [[unlikely]] {
            l.hold_timed = 0;
            const uint64_t end = env.now();
            record_hold(env.perf()->classes[l.class_id], l.hold_start, end,
                        param_hold_threshold(env.params()));
        }
    }
    spinlock::release(l, env);
}

}  // namespace spinlab::lockstat
