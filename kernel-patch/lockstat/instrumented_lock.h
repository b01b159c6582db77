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
// Booted with timing=all (timing.h; an Env with time_all()), every acquisition is stamped
// before its first try and once held, as the original experiment timed them: a first-try win
// is recorded as a timed acquisition (a wait bucket, not `uncontended`), and at the full level
// its hold is timed from that stamp.
//
// The Env is spinlock/algorithms.h's, plus:
//   uint64_t now();                        the boot-selected clock (clock.h)
//   CpuPerfData* perf();                   this CPU's perf data; never null (early boot: a
//                                          scratch block, not the null check on every lock)
//   const lockstat::SpinlockParams& params();   the live parameters
//   StealSample steal(uint32_t cpu);       that CPU's kvm_steal_time now; valid = 0 when it
//                                          has none (TCG, not registered, cpu == kNoCpu)
//
// and, optionally, the locktrace layer's two hooks (an Env without them compiles tracing away;
// the kernel's has them, host tests may):
//   bool tracing();                        a trace session wants spinlock facts on this CPU
//   void trace_release(const spinlock::Lock&, uint64_t release_tsc);
//                                          at release of a hold armed while tracing() was true:
//                                          l.trace holds the facts; decide and write the event
// With tracing() true (full level only) every acquisition is stamped, so that the hold rule can
// see every hold: that is the price of a running session, paid only while it runs.
//
// The caller must not migrate between acquire and release (perf() is the releasing CPU's,
// which must be the acquiring one): the kernel wrapper disables preemption or interrupts.
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

#include "../spinlock/algorithms.h"
#include "lhp.h"
#include "params.h"
#include "perf_record.h"
#include "timing.h"

namespace spinlab::lockstat {

template <class Env>
concept TracingEnv = requires(Env& e, const spinlock::Lock& l) {
    static_cast<bool>(e.tracing());
    e.trace_release(l, uint64_t{0});
};

template <class Env>
inline bool env_tracing(Env& env) {
    if constexpr (TracingEnv<Env>) return env.tracing();
    else return false;
}

inline uint64_t steal_delta(const StealSample& before, const StealSample& after) {
    return before.valid && after.valid && after.steal_ns >= before.steal_ns
               ? after.steal_ns - before.steal_ns
               : 0;
}

// Stamps and steal samples of one contended acquisition, on the waiter's stack.
template <InstrumentLevel L, class Env>
class WaitTracer {
  public:
    // The holder is read before the hold count (a win counts its hold, then stores its holder:
    // spinlock::note_holder), so a holder seen here was counted already. A count read before a
    // win that came earlier counts that hold as begun during the wait: one too many, never one
    // too few, which would hide a hand-over.
    WaitTracer(const spinlock::Lock& l, Env& env)
        : holder_(spinlock::load_relaxed(&l.holder_cpu)), seq_start_(read_seq(l)), self_(env.cpu()) {
        own_start_ = own_acquisitions(l, env);
        holder_before_ = holder_steal(env);
        self_before_ = env.steal(self_);
        start_ = env.now();
    }
    // timing=all: the wait began at `start`, stamped before the first try.
    WaitTracer(const spinlock::Lock& l, Env& env, uint64_t start)
        : holder_(spinlock::load_relaxed(&l.holder_cpu)), seq_start_(read_seq(l)), self_(env.cpu()),
          start_(start) {
        own_start_ = own_acquisitions(l, env);
        holder_before_ = holder_steal(env);
        self_before_ = env.steal(self_);
    }

    // The lock has just been taken after `spins` spins: stamp, classify, record.
    void acquired(spinlock::Lock& l, Env& env, uint64_t spins) {
        const uint64_t end = env.now();
        const StealSample holder_after = holder_steal(env);
        const StealSample self_after = env.steal(self_);
        const LhpClass lhp = classify_wait(holder_before_, holder_after, self_before_, self_after);
        CpuPerfData& p = *env.perf();
        // Before record_wait counts our own acquisition: did this CPU take any lock of the class
        // while we waited (another thread here, or an interrupt handler)?
        const bool took_none = own_acquisitions(l, env) == own_start_;
        const WaitRecord w = record_wait(p.classes[l.class_id], start_, end, lhp);
        if constexpr (L == InstrumentLevel::kFull) {
            // Every contended acquisition's hold is timed, from the stamp we already have.
            l.hold_start = end;
            l.hold_timed = 1;
            if (env_tracing(env)) [[unlikely]] {
                spinlock::HoldTrace& t = l.trace;
                t.acquire_tsc = end;
                t.wait_cycles = w.cycles;
                t.spins = 1 + spins;  // the failed try counts: >= 1 for every contended one
                t.holder_steal_ns = steal_delta(holder_before_, holder_after);
                t.waiter_steal_ns = steal_delta(self_before_, self_after);
                t.holder_cpu_start = holder_;
                t.holder_cpu_end = spinlock::load_relaxed(&l.released_by);
                // Our own hold is counted already (note_holder): the rest began during the wait.
                const uint32_t begun = spinlock::load_relaxed(&l.hold_seq) - 1u - seq_start_;
                t.handovers = uint8_t(begun < 255u ? begun : 255u);
                t.handovers_known = 1;
                t.waiter_cpu_took_none = took_none ? 1 : 0;
                t.contended = 1;
                t.wait_overflow = w.overflow;
                t.lhp_class = static_cast<uint8_t>(lhp);
                t.armed = 1;
            }
        }
        (void)spins;
        (void)took_none;
    }

  private:
    // No holder seen when the wait began (the lock was between two holders, or our own vCPU
    // lost its host CPU between the failed try and this read: under nested KVM that gap is
    // long): the holder's steal time is unknown, and so is the wait's class. It used to count
    // as "not preempted", which made 477 of 843 long waits of one KVM run "waiter-preempted"
    // while the host saw their holder descheduled.
    StealSample holder_steal(Env& env) {
        if (holder_ != kNoCpu) return env.steal(holder_);
        return StealSample{0, 0, 0};
    }

    // This CPU's count of the class's acquisitions (its own line; written by this CPU only). The
    // counters level does not trace, so it does not read it.
    static uint64_t own_acquisitions(const spinlock::Lock& l, Env& env) {
        if constexpr (L == InstrumentLevel::kFull) return env.perf()->classes[l.class_id].acquisitions;
        else return 0;
    }
    static uint32_t read_seq(const spinlock::Lock& l) {
        __atomic_signal_fence(__ATOMIC_ACQUIRE);  // after holder_cpu's load (x86 keeps loads in order)
        return spinlock::load_relaxed(&l.hold_seq);
    }
    uint32_t holder_;
    uint32_t seq_start_;  // Lock::hold_seq when the wait began
    uint64_t own_start_ = 0;  // this CPU's acquisitions of the class when the wait began
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
    constexpr void acquired(spinlock::Lock&, Env&, uint64_t) {}
};

// A first-try win's trace facts (full level, while a session wants them): no wait, no spins.
template <class Env>
inline void arm_uncontended_trace(spinlock::Lock& l, Env& env) {
    spinlock::HoldTrace& t = l.trace;
    t.acquire_tsc = l.hold_timed ? l.hold_start : env.now();
    t.wait_cycles = 0;
    t.spins = 0;
    t.holder_steal_ns = t.waiter_steal_ns = 0;
    t.holder_cpu_start = t.holder_cpu_end = kNoCpu;
    t.handovers = t.handovers_known = t.waiter_cpu_took_none = 0;
    t.contended = 0;
    t.wait_overflow = 0;
    t.lhp_class = static_cast<uint8_t>(LhpClass::kUnknown);
    t.armed = 1;
}

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
            if (env_tracing(env)) [[unlikely]] arm_uncontended_trace(l, env);
        }
    }
}

// timing=all: a first-try win timed from `start` (before the try) to now. It saw no holder, so
// its LHP class is unknown (timing.h says how the counters' invariants stay as they are).
template <InstrumentLevel L, class Env>
inline void note_first_try_timed(spinlock::Lock& l, Env& env, uint64_t start) {
    const uint64_t end = env.now();
    record_wait(env.perf()->classes[l.class_id], start, end, LhpClass::kUnknown);
    if constexpr (L == InstrumentLevel::kFull) {
        l.hold_start = end;  // every timed acquisition's hold is timed, as a contended one's
        l.hold_timed = 1;
        if (env_tracing(env)) [[unlikely]] arm_uncontended_trace(l, env);
    }
}

// timing=all's acquisition: stamp, try, and either note the timed win or wait from the stamp.
template <InstrumentLevel L, class Env>
inline void lock_acquire_timed(spinlock::Lock& l, spinlock::McsNode* node, Env& env) {
    const uint64_t start = env.now();
    if (spinlock::try_acquire(l, node, env)) {
        note_first_try_timed<L>(l, env, start);
        return;
    }
    WaitTracer<L, Env> tracer(l, env, start);
    const uint64_t spins = spinlock::acquire_contended(l, node, env);
    tracer.acquired(l, env, spins);
}

// spin_lock's core. node: this CPU's queue node for the current nesting level (queued lock).
template <InstrumentLevel L, class Env>
inline void lock_acquire(spinlock::Lock& l, spinlock::McsNode* node, Env& env) {
    if constexpr (L != InstrumentLevel::kOff) {
        if (env_time_all(env)) [[unlikely]] {
            lock_acquire_timed<L>(l, node, env);
            return;
        }
    }
    if (spinlock::try_acquire(l, node, env)) [[likely]] {
        note_uncontended<L>(l, env);
        return;
    }
    WaitTracer<L, Env> tracer(l, env);
    const uint64_t spins = spinlock::acquire_contended(l, node, env);
    tracer.acquired(l, env, spins);
}

// spin_unlock's core: close a timed hold (full level), hand a traced hold to locktrace, note
// who released, then release.
template <InstrumentLevel L, class Env>
inline void lock_release(spinlock::Lock& l, Env& env) {
    if constexpr (L == InstrumentLevel::kFull) {
        uint64_t end = 0;
        if (l.hold_timed) [[unlikely]] {
            l.hold_timed = 0;
            end = env.now();
            record_hold(env.perf()->classes[l.class_id], l.hold_start, end,
                        param_hold_threshold(env.params()));
        }
        if constexpr (TracingEnv<Env>) {
            if (l.trace.armed) [[unlikely]] {
                l.trace.armed = 0;
                env.trace_release(l, end ? end : env.now());
            }
        }
    }
    if constexpr (L != InstrumentLevel::kOff) spinlock::store_relaxed(&l.released_by, env.cpu());
    spinlock::release(l, env);
}

}  // namespace spinlab::lockstat
