// spinlock/preemptable_ticket_lock.h: the preemptable ticket lock (lock=pticket), after Ouyang
// and Lange, "Preemptable ticket spinlocks: improving consolidated performance in the cloud"
// (VEE'13).
//
// Why: a ticket lock hands the lock over in FIFO order. When the vCPU whose turn has come is
// not running (the host preempted it), the lock sits free and every CPU behind it waits a whole
// host time slice: lock-waiter preemption, the fair-lock collapse under overcommit. This lock
// keeps the FIFO order while the queue moves, and lets a waiter jump a turn that stalls:
//
//   - a waiter takes a ticket, as in the ticket lock;
//   - holding the lock is a separate "locked" bit, taken only with a compare-and-swap: that
//     CAS, not the ticket order, is what keeps mutual exclusion;
//   - "serving" is the ticket whose turn it is; a release moves it past the releaser's ticket
//     (to ticket + 1, unless it is already beyond), so a waiter's distance from the head is
//     d = its ticket - serving;
//   - a waiter may try the CAS once its turn has come (d <= 0), or once it has waited
//     d * unit spins without `serving` moving (unit: Env::pticket_timeout_unit()). The
//     timeout restarts whenever `serving` moves, so it measures a stalled queue, not a long
//     one; the waiter nearest the head times out first. From then on it competes with CAS
//     until it wins.
//
// So a waiter whose turn comes while its vCPU is preempted is skipped after `unit` spins of the
// waiter behind it; when it runs again it sees that its turn has passed (d < 0) and competes
// for the lock at once: it rejoins at the head, not at the tail. Its release leaves serving
// where it is (its turn had passed).
//
// Word (Lock::word.pticket, one 64-bit word, so that try_acquire is one CAS):
//   state  bit 0 locked, bits 1..31 serving (mod 2^31). A release is one store of the new
//          serving with the locked bit clear.
//   next   the next ticket (mod 2^32; distances are taken mod 2^31, so 2^30 waiters at once
//          would be needed to confuse them).
// Free and nobody waiting in turn: state == next << 1 (no ticket at or after serving is
// out; a skipped waiter may still hold an older one, and competes by CAS when it runs).
//
// What it keeps of the paper: tickets, a separate lock word taken by CAS, a timeout
// proportional to the distance from the head and restarted when the head moves, out-of-order
// acquisition after it. Where it differs: the paper's release adds one to the head, a count of
// releases; then, while a skipped waiter is away, its unused turn keeps the head one behind,
// and every later hand-over waits out a timeout (measured here, 3 vCPUs on 2 host cores with
// a hog, TCG, 5 s: 3,272 acquisitions, against ticket's 65,063). Moving serving past the
// releaser's ticket costs one timeout per skipped turn instead. Not emulated: the paper's
// paravirtual variant (halting a waiter and kicking it at release) and its tuning of the
// timeout; here the timeout is one constant for every lock (kPticketTimeoutUnit), in spins.
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

// Spins a waiter waits per place between it and the head before it may take the lock out of
// order (Env::pticket_timeout_unit(); the kernel and lockbench use this constant).
// Counted in spins, as the paper's TIMEOUT_UNIT, so the loop needs no clock read (a clock
// read is a TCG helper call, and with clock=cpuid a VM exit). One spin is a load and a pause:
// from about 10 ns (TCG; pre-Skylake pause) to about 50 ns (Skylake and later, ~140 cycles),
// so 2^11 spins are about 20 to 100 us per place. That is 20 to 100 times a hand-over plus
// lockbench's critical section (a few hundred cycles to a microsecond), so a moving queue
// almost never times out and the lock stays FIFO; and it is 30 to 300 times shorter than a host
// time slice (3 to 26 ms here, architecture.md), so a stalled turn costs the queue a small
// fraction of the slice the ticket lock loses.
constexpr uint32_t kPticketTimeoutUnit = 1u << 11;

constexpr uint32_t kPticketLocked = 1u;
constexpr uint64_t kPticketOneTicket = 1ull << 32;  // one ticket, in the high half

// Distance of `ticket` from the head (`serving`), mod 2^31: > 0 still behind, <= 0 its turn
// has come (< 0: it has passed, the waiter was skipped).
inline int32_t pticket_distance(uint32_t ticket, uint32_t serving) {
    return static_cast<int32_t>((ticket - serving) << 1) >> 1;
}

inline uint32_t pticket_serving(uint32_t state) { return state >> 1; }

// Free and nobody queued: take a ticket and the lock in one lock cmpxchg.
inline bool pticket_try_acquire(Lock& l) {
    uint64_t old = load_relaxed(&l.word.raw64);
    const uint32_t state = static_cast<uint32_t>(old), next = static_cast<uint32_t>(old >> 32);
    if (state != (next << 1)) return false;  // held, or tickets outstanding
    const uint64_t taken = (old + kPticketOneTicket) | kPticketLocked;
    if (!__atomic_compare_exchange_n(&l.word.raw64, &old, taken, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return false;
    l.pticket_owner = next;
    return true;
}

// lock xadd on the high half: our ticket (a carry out of bit 63 is dropped).
inline uint32_t pticket_take_ticket(Lock& l) {
    const uint64_t old = __atomic_fetch_add(&l.word.raw64, kPticketOneTicket, __ATOMIC_RELAXED);
    return static_cast<uint32_t>(old >> 32);
}

// One CAS on the state half: locked bit clear -> set. Acquire: the critical section stays below.
inline bool pticket_take_lock(Lock& l, uint32_t state) {
    if (state & kPticketLocked) return false;
    return __atomic_compare_exchange_n(&l.word.pticket.state, &state, state | kPticketLocked, false,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

// Waits with ticket `mine` until it holds the lock (see the top of the file). Returns the spins.
template <class Env>
inline uint64_t pticket_wait(Lock& l, uint32_t mine, Env& env) {
    const uint64_t unit = env.pticket_timeout_unit();
    bool may_take = false;   // our turn came, or we timed out: compete with CAS from now on
    uint32_t head = 0;       // serving when the timeout (re)started
    uint64_t budget = 0;     // spins left before we may take the lock out of order
    bool counting = false;
    uint64_t spins = 0;
    for (;;) {
        const uint32_t state = load_acquire(&l.word.pticket.state);
        if (!may_take) {
            const uint32_t serving = pticket_serving(state);
            const int32_t d = pticket_distance(mine, serving);
            if (d <= 0) {
                may_take = true;  // our turn (or it passed while we were away: rejoin at once)
            } else if (!counting || serving != head) {
                counting = true;  // the queue moved: a fresh timeout for our new distance
                head = serving;
                budget = unit * static_cast<uint64_t>(d);
            } else if (budget == 0 || --budget == 0) {
                may_take = true;  // the queue stalled for d * unit spins: skip the stalled turn
            }
        }
        if (may_take && pticket_take_lock(l, state)) {
            l.pticket_owner = mine;
            return spins;
        }
        env.relax();
        if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
    }
}

template <class Env>
inline uint64_t pticket_acquire_contended(Lock& l, Env& env) {
    return pticket_wait(l, pticket_take_ticket(l), env);
}

// Serving after the release of the holder of ticket `owner`: the ticket after it, unless
// serving is already beyond (the holder was a skipped waiter that rejoined).
inline uint32_t pticket_serving_after(uint32_t serving, uint32_t owner) {
    return pticket_distance(owner + 1, serving) > 0 ? owner + 1 : serving;
}

// Only the holder writes the state half while the locked bit is set (a waiter's CAS needs it
// clear), so one release store both moves serving on and unlocks.
inline void pticket_release(Lock& l) {
    const uint32_t state = load_relaxed(&l.word.pticket.state);
    const uint32_t serving = pticket_serving_after(pticket_serving(state), l.pticket_owner);
    store_release(&l.word.pticket.state, serving << 1);
}

inline bool pticket_is_locked(const Lock& l) {
    return (load_relaxed(&l.word.pticket.state) & kPticketLocked) != 0;
}

}  // namespace spinlab::spinlock
