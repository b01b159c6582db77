// spinlock/queued_lock.h: MCS queued lock (Mellor-Crummey and Scott). Each waiter spins on the
// `waiting` flag of its own node, so a release touches one waiter's cache line instead of
// every spinner's. The lock holds the tail of the queue; the holder's node is kept in the
// lock (mcs_owner) so release() needs no node argument.
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

// Free means no tail: install our node as the whole queue in one lock cmpxchg.
inline bool queued_try_acquire(Lock& l, McsNode* node) {
    node->next = nullptr;
    node->waiting = 0;
    McsNode* expected = nullptr;
    if (!__atomic_compare_exchange_n(&l.mcs_tail, &expected, node, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return false;
    l.mcs_owner = node;
    return true;
}

// Returns the spins (reads of our node's flag while queued; 0 when the lock was free by then).
template <class Env>
inline uint64_t queued_acquire_contended(Lock& l, McsNode* node, Env& env) {
    node->next = nullptr;
    store_relaxed(&node->waiting, 1u);
    // lock xchg: append ourselves. Acq_rel: our node's fields are initialised before a
    // successor or predecessor can see the node, and the critical section stays below.
    McsNode* prev = __atomic_exchange_n(&l.mcs_tail, node, __ATOMIC_ACQ_REL);
    uint64_t spins = 0;
    if (prev != nullptr) {
        // Link behind the predecessor; its release clears our flag (release store) and we
        // see everything it wrote in its critical section (acquire load).
        store_release(&prev->next, node);
        while (load_acquire(&node->waiting)) {
            env.relax();
            if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
        }
    }
    l.mcs_owner = node;
    return spins;
}

template <class Env>
inline void queued_release(Lock& l, Env& env) {
    McsNode* node = l.mcs_owner;
    McsNode* next = load_acquire(&node->next);
    if (next == nullptr) {
        // No successor linked: if we are still the tail, the lock becomes free.
        McsNode* expected = node;
        if (__atomic_compare_exchange_n(&l.mcs_tail, &expected, nullptr, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
        // A successor swapped itself in but has not linked yet: wait the few instructions.
        while ((next = load_acquire(&node->next)) == nullptr) env.relax();
    }
    store_release(&next->waiting, 0u);  // hand over: the successor now holds the lock
}

}  // namespace spinlab::spinlock
