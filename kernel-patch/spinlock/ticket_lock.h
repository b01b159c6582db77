// spinlock/ticket_lock.h: FIFO ticket lock. A CPU takes the next ticket with one `lock xadd`
// on the high half and waits until the low half ("now serving") shows it. Fair: the releasing
// CPU cannot re-take the lock ahead of a waiter (the starvation the test-and-set lock shows
// under ring-3 KVM, see architecture.md).
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

constexpr uint32_t kTicketOne = 1u << 16;  // one ticket, in the high half of the word

// Take a ticket only if it would be served at once: the lock is free when serving == next.
inline bool ticket_try_acquire(Lock& l) {
    uint32_t old = load_relaxed(&l.word.raw);
    if ((old >> 16) != (old & 0xFFFF)) return false;
    // lock cmpxchg: full barrier on success, so the critical section stays below it.
    return __atomic_compare_exchange_n(&l.word.raw, &old, old + kTicketOne, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

// Returns the spins (reads of "now serving" that were not our ticket).
template <class Env>
inline uint64_t ticket_acquire_contended(Lock& l, Env& env) {
    // lock xadd on the whole word adds to the high half only; it wraps at 2^16 tickets,
    // harmlessly, as long as fewer than 65536 CPUs wait at once.
    const uint16_t mine =
        static_cast<uint16_t>(__atomic_fetch_add(&l.word.raw, kTicketOne, __ATOMIC_ACQUIRE) >> 16);
    uint64_t spins = 0;
    while (load_acquire(&l.word.ticket.serving) != mine) {
        env.relax();
        if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
    }
    return spins;
}

// Serve the next ticket with a 16-bit store to the low half, so the increment never carries
// into the ticket counter; only the holder writes "serving", so no atomic add is needed.
inline void ticket_release(Lock& l) {
    const uint16_t serving = load_relaxed(&l.word.ticket.serving);
    store_release(&l.word.ticket.serving, static_cast<uint16_t>(serving + 1));
}

}  // namespace spinlab::spinlock
