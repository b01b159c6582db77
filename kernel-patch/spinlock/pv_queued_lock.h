// spinlock/pv_queued_lock.h: the preemption-aware queued lock (lock=pvmcs). An MCS lock
// (queued_lock.h: the same queue, the same release) whose waiter spins only while the vCPU it
// waits on runs:
//
//   - each node records its CPU (McsNode::cpu), so the waiter behind it knows whose vCPU
//     it waits on;
//   - a queued waiter asks Env::vcpu_is_off() about its predecessor's CPU, and, when
//     that one runs, about the lock holder's (l.holder_cpu, racy; the predecessor may itself
//     be waiting on a preempted holder);
//   - when either is found preempted it yields once (Env::yield_to(that cpu)): in a VM its time
//     slice goes towards the preempted vCPU, which is what the waiter needs to run. At most one
//     yield per preempted spell of the vCPU ahead (a spell: the answers about that CPU say
//     "preempted" without a "running" between them); for the rest of the spell it pauses as
//     mcs does. A yield in ring 3 is a system call, and yielding at every check made lockbench's
//     pvmcs spend its time in the kernel: ~270,000 yields in 6 s, 0.05 to 0.18 of ticket's
//     throughput at 1 to 2 vCPUs per host CPU (issue 39);
//   - it never leaves the queue: the hand-over stays FIFO, and mutual exclusion is MCS's.
//
// What it emulates: the preempted-vCPU checks of Linux (vcpu_is_preempted() in osq_lock's and
// the mutex's optimistic spinning, which stop spinning when the vCPU they wait on is off its
// CPU) and the yield of pv spinlocks. What it does not: Linux's pv qspinlock halts waiters and
// has the releaser kick a halted successor (pv_wait/pv_kick); osq_lock unqueues the waiter. A
// hand-over to a preempted successor still waits for that vCPU to run, as in mcs.
//
// vcpu_is_off() is only as good as the Env's source: the kernel's reads the host's
// "off" word or KVM steal time (kern/vcpu_off.h), lockbench's the same two through its
// read-only mappings (kSysMapLockstat); without a source it answers false, and this lock behaves
// as mcs. In ring 3 a yield is a system call: told "preempted" in 1% of its checks and yielding at
// each, lockbench's pvmcs spent most of its time yielding (experiments/README.md, "The mitigation
// study"); hence one yield per spell.
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

// queued_try_acquire with the node's CPU recorded, and a release CAS, so that a successor that
// swaps itself in behind us reads our CPU.
inline bool pvmcs_try_acquire(Lock& l, McsNode* node, uint32_t cpu) {
    node->next = nullptr;
    node->waiting = 0;
    node->cpu = cpu;
    McsNode* expected = nullptr;
    if (!__atomic_compare_exchange_n(&l.mcs_tail, &expected, node, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return false;
    l.mcs_owner = node;
    return true;
}

// The vCPU worth yielding to: the predecessor's if it is preempted, else the holder's if it is
// (and is another CPU); kNoCpu when both run and spinning is worth it.
template <class Env>
inline uint32_t pvmcs_preempted_ahead(const Lock& l, uint32_t prev_cpu, Env& env) {
    if (env.vcpu_is_off(prev_cpu)) return prev_cpu;
    const uint32_t holder = load_relaxed(&l.holder_cpu);
    if (holder != kNoCpu && holder != prev_cpu && env.vcpu_is_off(holder)) return holder;
    return kNoCpu;
}

// Returns the spins (pauses and yields while queued; 0 when the lock was free by then).
template <class Env>
inline uint64_t pvmcs_acquire_contended(Lock& l, McsNode* node, Env& env) {
    node->next = nullptr;
    node->cpu = env.cpu();
    store_relaxed(&node->waiting, 1u);
    McsNode* prev = __atomic_exchange_n(&l.mcs_tail, node, __ATOMIC_ACQ_REL);
    uint64_t spins = 0;
    if (prev != nullptr) {
        // Read before we link: once linked, the predecessor may release and reuse its node.
        const uint32_t prev_cpu = load_relaxed(&prev->cpu);
        store_release(&prev->next, node);
        uint32_t yielded_for = kNoCpu;  // the preempted vCPU whose spell we already yielded to
        while (load_acquire(&node->waiting)) {
            const uint32_t off = pvmcs_preempted_ahead(l, prev_cpu, env);
            if (off != kNoCpu && off != yielded_for) {
                env.yield_to(off);
                yielded_for = off;
            } else {
                if (off == kNoCpu) yielded_for = kNoCpu;  // the spell ended: the next one yields
                env.relax();
            }
            if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
        }
    }
    l.mcs_owner = node;
    return spins;
}

// The release is queued_release (queued_lock.h).

}  // namespace spinlab::spinlock
