// spinlock/algorithms.h: one lock object for the algorithms spinlab compares, chosen at boot
// (lock=) in one kernel binary, and the entry points the instrumentation wraps:
//
//   tas      tas_lock.h                  test-and-set, the original lock
//   ticket   ticket_lock.h               FIFO ticket lock
//   mcs      queued_lock.h               MCS queued lock
//   pv       pv_lock.h                   bounded spin, then yield towards the holder
//   pticket  preemptable_ticket_lock.h   ticket lock whose waiters skip a stalled turn (VEE'13)
//   pvmcs    pv_queued_lock.h            MCS lock that yields while the vCPU ahead is preempted
//   student  student_lock.h              lab 5's lock (a plain test-and-set as shipped)
//   pvqspin  pv_qspinlock.h              Linux's paravirtual queued lock: queue, spin, halt, kick
//
//   try_acquire()        one attempt, no spinning: the fast path. An uncontended acquisition
//                        is exactly one successful try_acquire(); nothing else runs.
//   acquire_contended()  called only after a failed try_acquire(): spins (or queues, or
//                        yields) until the lock is held. The instrumentation stamps the clock
//                        around this call only; no statistics code runs inside its loops.
//   release()
//
// The environment policy (Env) is how the code reaches the machine without depending on it;
// the kernel passes its own, the host tests and benchmarks theirs. An Env provides:
//
//   LockAlgorithm algorithm();            the algorithm chosen at boot; constant after boot
//   uint32_t cpu();                       this CPU's number, recorded as holder_cpu
//   void relax();                         one spin-wait iteration: pause, or nothing (pause=off)
//   uint32_t pv_spin_bound();             PV lock: reads of the lock word before yielding, >= 1
//   void yield_to(uint32_t holder_cpu);   PV lock: give this vCPU's time towards the holder
//                                         (KVM_HC_SCHED_YIELD; else hlt or pause). holder_cpu
//                                         may be kNoCpu when the holder was not yet recorded.
//   void spin_check(const Lock&, uint64_t spins);
//                                         called every kSpinCheckInterval iterations of any spin
//                                         loop: the lockup detector (compare the TSC against the
//                                         boot-time bound, print name, holder CPU and site).
//   uint32_t pticket_timeout_unit();      pticket: spins a waiter waits per place between it
//                                         and the head before it may take the lock out of
//                                         order (kPticketTimeoutUnit; tests script it)
//   bool vcpu_is_off(uint32_t cpu); pvmcs, pvqspin and student: that CPU's vCPU is off
//                                         its host CPU now, as far as the Env knows (false
//                                         when it cannot tell, and for kNoCpu)
//
// pvqspin's optional methods (pv_wait, pv_kick, pv_count, pvqspin_spin_bound) are listed in
// pv_qspinlock.h; an Env without pv_wait yields (yield_to(kNoCpu)) where the lock would halt.
//
// Interrupts and preemption are the kernel wrapper's business: the caller must not be
// preempted (or migrated) between try_acquire/acquire_contended and release.
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

#include "lock.h"
#include "preemptable_ticket_lock.h"
#include "pv_lock.h"
#include "pv_qspinlock.h"
#include "pv_queued_lock.h"
#include "queued_lock.h"
#include "student_lock.h"
#include "tas_lock.h"
#include "ticket_lock.h"

namespace spinlab::spinlock {

// Whether the algorithm queues: the caller passes a queue node (McsNode) that must stay put
// from acquisition to release. The others take node == nullptr.
constexpr bool uses_queue_node(LockAlgorithm a) {
    return a == LockAlgorithm::kQueued || a == LockAlgorithm::kParavirtQueued ||
           a == LockAlgorithm::kPvQspinlock;
}

// One attempt. On success the caller holds the lock and holder_cpu is recorded.
// node: the caller's queue node (used by the queued locks only, see uses_queue_node(); may be
// null otherwise).
// A win: one more hold begun on l (Lock::hold_seq), then its holder. In that order, so that a
// waiter that reads holder_cpu and then hold_seq and sees this holder has seen its hold counted.
inline void note_holder(Lock& l, uint32_t cpu) {
    store_relaxed(&l.hold_seq, load_relaxed(&l.hold_seq) + 1u);
    __atomic_signal_fence(__ATOMIC_RELEASE);  // x86 keeps stores in order; the compiler must too
    store_relaxed(&l.holder_cpu, cpu);
}

template <class Env>
inline bool try_acquire(Lock& l, McsNode* node, Env& env) {
    bool won;
    switch (env.algorithm()) {
        case LockAlgorithm::kTicket:
            won = ticket_try_acquire(l);
            break;
        case LockAlgorithm::kQueued:
            won = queued_try_acquire(l, node);
            break;
        case LockAlgorithm::kPreemptableTicket:
            won = pticket_try_acquire(l);
            break;
        case LockAlgorithm::kParavirtQueued:
            won = pvmcs_try_acquire(l, node, env.cpu());
            break;
        case LockAlgorithm::kStudent:
            won = student_try_acquire(l, env);
            break;
        case LockAlgorithm::kPvQspinlock:
            won = pvq_try_acquire(l, node);
            break;
        case LockAlgorithm::kTestAndSet:
        case LockAlgorithm::kParavirt:
        default:
            won = tas_try_acquire(l);
            break;
    }
    if (won) note_holder(l, env.cpu());
    return won;
}

// After a failed try_acquire(): returns holding the lock, holder_cpu recorded. The result is
// the spin count of the algorithm's wait loop (the counter it keeps for spin_check anyway).
template <class Env>
inline uint64_t acquire_contended(Lock& l, McsNode* node, Env& env) {
    uint64_t spins;
    switch (env.algorithm()) {
        case LockAlgorithm::kTicket:
            spins = ticket_acquire_contended(l, env);
            break;
        case LockAlgorithm::kQueued:
            spins = queued_acquire_contended(l, node, env);
            break;
        case LockAlgorithm::kParavirt:
            spins = pv_acquire_contended(l, env);
            break;
        case LockAlgorithm::kPreemptableTicket:
            spins = pticket_acquire_contended(l, env);
            break;
        case LockAlgorithm::kParavirtQueued:
            spins = pvmcs_acquire_contended(l, node, env);
            break;
        case LockAlgorithm::kStudent:
            spins = student_acquire_contended(l, env);
            break;
        case LockAlgorithm::kPvQspinlock:
            spins = pvq_acquire_contended(l, node, env);
            break;
        case LockAlgorithm::kTestAndSet:
        default:
            spins = tas_acquire_contended(l, env);
            break;
    }
    note_holder(l, env.cpu());
    return spins;
}

template <class Env>
inline void acquire(Lock& l, McsNode* node, Env& env) {
    if (!try_acquire(l, node, env)) acquire_contended(l, node, env);
}

template <class Env>
inline void release(Lock& l, Env& env) {
    store_relaxed(&l.holder_cpu, kNoCpu);
    l.holder_site = nullptr;
    switch (env.algorithm()) {
        case LockAlgorithm::kTicket:
            ticket_release(l);
            break;
        case LockAlgorithm::kQueued:
        case LockAlgorithm::kParavirtQueued:
            queued_release(l, env);
            break;
        case LockAlgorithm::kPreemptableTicket:
            pticket_release(l);
            break;
        case LockAlgorithm::kStudent:
            student_release(l, env);
            break;
        case LockAlgorithm::kPvQspinlock:
            pvq_release(l, env);
            break;
        case LockAlgorithm::kTestAndSet:
        case LockAlgorithm::kParavirt:
        default:
            tas_release(l);
            break;
    }
}

// Whether the lock looks held right now (racy; for assertions and the lockup report).
inline bool is_locked(const Lock& l, LockAlgorithm algo) {
    switch (algo) {
        case LockAlgorithm::kTicket: {
            uint32_t w = load_relaxed(&l.word.raw);
            return (w >> 16) != (w & 0xFFFF);
        }
        case LockAlgorithm::kQueued:
        case LockAlgorithm::kParavirtQueued:
            return load_relaxed(&l.mcs_tail) != nullptr;
        case LockAlgorithm::kPreemptableTicket:
            return pticket_is_locked(l);
        case LockAlgorithm::kStudent:
            return student_is_locked(l);
        case LockAlgorithm::kPvQspinlock:
            return pvq_is_locked(l);
        default:
            return (load_relaxed(&l.word.raw) & 1) != 0;
    }
}

}  // namespace spinlab::spinlock
