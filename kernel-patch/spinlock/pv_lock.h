// spinlock/pv_lock.h: paravirtual spin-then-yield. The word is the test-and-set lock's; a
// waiter spins for pv_spin_bound() reads, then gives its time slice towards the holder's
// vCPU (the kernel's Env uses KVM's PV sched-yield hypercall when the host offers it, else
// halts or pauses) and starts spinning again. This is the remedy for lock-holder preemption:
// a waiter that spins past the bound is likely waiting on a preempted holder.
//
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

// Returns the spins (reads of a held word, yields included).
template <class Env>
inline uint64_t pv_acquire_contended(Lock& l, Env& env) {
    const uint32_t bound = env.pv_spin_bound();
    uint64_t spins = 0;
    uint32_t since_yield = 0;
    for (;;) {
        while (load_relaxed(&l.word.raw) & 1) {
            if (++since_yield >= bound) {
                // The holder may be off its CPU: yield towards it instead of burning ours.
                env.yield_to(load_relaxed(&l.holder_cpu));
                since_yield = 0;
            } else {
                env.relax();
            }
            if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
        }
        if (!test_and_set_bit0(&l.word.raw)) return spins;
    }
}

}  // namespace spinlab::spinlock
