// spinlock/tas_lock.h: test-and-set, the lock of the original experiment (the Windows Research
// Kernel's ACQUIRE_SPINLOCK / SPIN_ON_SPINLOCK macros): `lock bts` to take it; when that fails,
// spin *reading* the word (so the cache line stays shared until the holder writes it) with pause
// until it looks free, then try again.
//
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

inline bool tas_try_acquire(Lock& l) {
    return !test_and_set_bit0(&l.word.raw);
}

// Spin until bit 0 reads clear. Shared by the TAS and PV slow paths.
template <class Env>
inline void tas_spin_while_held(Lock& l, Env& env, uint64_t& spins) {
    while (load_relaxed(&l.word.raw) & 1) {
        env.relax();
        if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
    }
}

// Returns the spins (reads of a held word).
template <class Env>
inline uint64_t tas_acquire_contended(Lock& l, Env& env) {
    uint64_t spins = 0;
    do {
        tas_spin_while_held(l, env, spins);
    } while (test_and_set_bit0(&l.word.raw));
    return spins;
}

// Clearing the word is the release; holder fields were cleared before it by the caller.
inline void tas_release(Lock& l) {
    store_release(&l.word.raw, 0u);
}

}  // namespace spinlab::spinlock
