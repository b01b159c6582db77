// spinlock/student_lock.h: YOUR lock, lab 5 ("Write your own lock"). Boot with lock=student and
// every spinlock of the kernel, and lockbench's ring-3 locks, run the code in this file.
//
// As shipped it is the plainest correct lock there is: test-and-set, spinning on the atomic
// instruction itself. It is correct, and slow: every spin is a locked write that takes the
// cache line away from the holder and from every other waiter.
//
// The lab's goal (labs/ has the worksheet):
//   1. beat ticket under overcommit (more vCPUs than host CPUs, with a hog: lab 3's setup), and
//   2. stay within 2x of tas when not overcommitted,
//   3. while staying exact: `lockbench --verify` must agree with the kernel's counters.
//
// The rules of the game (the kernel calls these four functions; keep their names and types):
//   student_try_acquire(l, env)        ONE attempt, no waiting. true: you hold the lock.
//   student_acquire_contended(l, env)  called only after a failed try: return holding the
//                                      lock. Return how many times you spun (any count you
//                                      keep; it is reported with the wait).
//   student_release(l, env)            let go. The critical section must stay above it.
//   student_is_locked(l)               does the lock look held right now (racy is fine)?
// What you may use:
//   l.word.raw             a 32-bit word for your lock, 0 when the lock is initialised (there
//                          is also l.word.raw64, 64 bits, if you need more state);
//   l.holder_cpu           the CPU holding the lock (kNoCpu when free), written by the kernel
//                          right after your acquire returns and before your release; a racy hint;
//   atomic_ops.h           load_relaxed, load_acquire, store_release, test_and_set_bit0,
//                          cpu_pause; and the GCC __atomic builtins;
//   env.relax()            one polite spin iteration (pause);
//   env.cpu()              this CPU's number;
//   env.vcpu_is_off(cpu)   true while that vCPU is off its host CPU (when the host or
//                          KVM says so; false when nobody knows);
//   env.yield_to(cpu)      give this vCPU's time towards that CPU's vCPU;
//   env.spin_check(l, spins)     call it every kSpinCheckInterval spins (the lockup detector).
// No allocation, no libc, no other locks: this runs inside the kernel, often with interrupts off.
//
// Instructors: labs/solutions/student_lock_solution.h is a reference solution. To build the kernel with
// it, copy it over this file and rebuild:
//     cp labs/solutions/student_lock_solution.h kernel-patch/spinlock/student_lock.h && make kernel
// (git checkout kernel-patch/spinlock/student_lock.h restores the exercise). Both files use
// the include guard SPINLAB_STUDENT_LOCK_H, so a program that includes the solution before
// algorithms.h gets the solution: that is how the host test of the solution
// (spinlock/student_solution_test.cc) builds it. Remove labs/solutions/ before handing out.
#ifndef SPINLAB_STUDENT_LOCK_H
#define SPINLAB_STUDENT_LOCK_H

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

// Bit 0 of the word set = held.
template <class Env>
inline bool student_try_acquire(Lock& l, Env&) {
    return !test_and_set_bit0(&l.word.raw);
}

template <class Env>
inline uint64_t student_acquire_contended(Lock& l, Env& env) {
    uint64_t spins = 0;
    // TODO 1: every test_and_set_bit0 is a locked write, even when the lock is held. Spin
    //         *reading* the word (load_relaxed) until it looks free, and only then try the
    //         atomic again ("test-and-test-and-set").
    // TODO 2: when many CPUs see the lock free at once they all try together. Back off: wait
    //         a little longer (more env.relax() calls) after each failed try, up to a cap.
    // TODO 3: under overcommit the holder may be a vCPU the host took off its CPU: spinning
    //         then only burns the time it needs. Ask env.vcpu_is_off(l.holder_cpu) and
    //         env.yield_to() it instead of spinning.
    while (test_and_set_bit0(&l.word.raw)) {
        env.relax();
        if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
    }
    return spins;
}

template <class Env>
inline void student_release(Lock& l, Env&) {
    // A release store: nothing from the critical section moves below it.
    store_release(&l.word.raw, 0u);
}

inline bool student_is_locked(const Lock& l) {
    return (load_relaxed(&l.word.raw) & 1) != 0;
}

}  // namespace spinlab::spinlock

#endif  // SPINLAB_STUDENT_LOCK_H
