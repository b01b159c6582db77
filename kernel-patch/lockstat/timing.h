// lockstat/timing.h: what the instrumented lock times, chosen at boot (timing=).
//
//   timing=contended  the default: the first try takes no stamp; a win counts as `uncontended`,
//                     untimed. Only contended acquisitions are timed (instrumented_lock.h).
//   timing=all        every acquisition is timed, as the original WRK experiment timed them
//                     (`cpuid; rdtsc` before ACQUIRE_SPINLOCK, again once the lock was taken):
//                     a stamp before the first try, one when the lock is held. This gives the
//                     original's table, whose peak is the uncontended case (2^8 cycles there).
//
// How timing=all keeps the counters' invariants (spinlab/perfdata.h):
// - A first-try win is recorded as a timed acquisition: `acquisitions`, a wait bucket (or
//   `wait_overflow` if the clock went backwards), the wait sum and maximum, and the LHP class
//   `unknown` (it saw no holder, which is the rule for any wait that saw none). It is not counted
//   in `uncontended`, which counts untimed first-try wins and stays 0 under timing=all. So
//       uncontended + sum(wait_hist) + wait_overflow == acquisitions
//       sum(lhp_count) == acquisitions - uncontended
//   hold as they are, and every checker of them (lab 1's, the soak's, spinlab-report's
//   buckets.invariant_error, the kernel self-tests) stays valid. What is given up: the counters no
//   longer tell first-try wins from waits (the original's table could not either), so a report's
//   contended share reads 100 %.
// - At the full level every timed acquisition's hold is timed from its end stamp, as a
//   contended one's is: holds_timed == acquisitions. SpinLockAcquireSampleRate then picks only
//   which first-try wins the spinlock trace group samples (rule a, locktrace/sampling.h).
// - A first-try win is never a long wait (that rule is for contended acquisitions), even when
//   its vCPU lost the host CPU between the two stamps: the table's long rows may then hold more
//   than the long-wait events list.
// - The price: two clock reads on every acquisition (with clock=cpuid, two VM exits under KVM),
//   and it is inside every row of the table; the original subtracted nothing either.
//
// An Env opts in with `bool time_all()` (the kernel's reads the boot option, lockbench's the
// LockstatMapping); an Env without it times contended acquisitions only. INSTRUMENT=0 compiles
// all of it away with the rest of the instrumentation (lock_acquire's `if constexpr`).
#pragma once

#include <stdint.h>

namespace spinlab::lockstat {

// timing= as the boot option spells it; the order is the option's choice order.
enum class Timing : uint32_t {
    kContended = 0,  // time contended acquisitions only (default)
    kAll = 1,        // time every acquisition
};
constexpr const char* timing_name(Timing t) { return t == Timing::kAll ? "all" : "contended"; }

template <class Env>
concept TimingEnv = requires(Env& e) { static_cast<bool>(e.time_all()); };

template <class Env>
inline bool env_time_all(Env& env) {
    if constexpr (TimingEnv<Env>) return env.time_all();
    else return false;
}

}  // namespace spinlab::lockstat
