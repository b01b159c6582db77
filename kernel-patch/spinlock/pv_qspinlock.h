// spinlock/pv_qspinlock.h: the paravirtual queued spinlock (lock=pvqspin), after the one Linux
// runs under KVM (kernel/locking/qspinlock.c with qspinlock_paravirt.h; written here from its
// design, not its code). Waiters that cannot get the lock soon stop spinning: they halt their
// vCPU, and whoever makes progress possible for them kicks it awake.
//
// State: the lock byte (Lock::word.pvq_locked: 0 free, kPvqLocked held, kPvqSlow held and a
// halted queue head waits for the release to kick it), an MCS queue of waiters (Lock::mcs_tail
// and each waiter's McsNode), and a hash from lock to the halted queue head's node
// (pv_hash_table(): the lock word has no room for it in Linux, and the release must find the
// node to kick).
//
//   fast path   try_acquire: with nobody queued, take a free byte (one cmpxchg).
//   steal       acquire_contended first makes ONE attempt at the byte, queue or no queue: a
//               waiter that arrives just as the lock is freed takes it past the queue (unfair,
//               as Linux's pv_queued_spin_steal_lock; counted as pv_steals when waiters were
//               queued). Then it queues and stays queued: the queue is FIFO.
//   queued      a waiter behind another spins on its node's `waiting`, at most
//               Env::pvqspin_spin_bound() loops (pvqspin-spin=, 2^15 as Linux's SPIN_THRESHOLD),
//               checking every 256 loops (the first included) whether its predecessor's vCPU is
//               off its CPU (the predecessor's node says halted, or Env::vcpu_is_off); then,
//               or at the bound, it halts (Env::pv_wait on its node's state). The predecessor,
//               when it makes it the queue head, kicks it if it finds it halted.
//   queue head  spins on the byte, taking it when free, for the bound; then records lock ->
//               node in the hash, marks the byte kPvqSlow and halts (Env::pv_wait on the byte).
//               Having taken the byte, it hands the head to its successor and leaves the queue:
//               its node is free while it holds the lock.
//   release     a cmpxchg kPvqLocked -> 0; when it finds kPvqSlow, it takes the head's node out
//               of the hash, frees the byte and kicks that node's CPU (Env::pv_kick).
//
// The lockup detector (Env::spin_check) runs every kSpinCheckInterval spins and at every
// wake-up from a halt: a waiter that halted with interrupts on is woken by timer interrupts
// (spurious wake-ups) and still reports a lockup; with interrupts off only its kick wakes it.
//
// The halt and the kick (Env::pv_wait, Env::pv_kick) must not lose a wake-up: pv_wait(p, v)
// halts only while *p == v, and a kick sent after the kicker changed *p must wake it even when
// it arrives between the waiter's check and its halt (the kernel's Env: kern/spinlock.cc, the
// kick is KVM_HC_KICK_CPU or an NMI). Every kick here follows the store that ends the waiter's
// wait (the byte to 0, the node's state to running), and every waiter re-checks what it waits
// for after pv_wait returns, so a spurious return costs only time.
//
// Ring 3 (lockbench, user/bin/lockbench.cc) can neither halt its vCPU nor kick another: its Env
// has word_wait and word_wake instead (PvWordEnv below, the futex-like kSysWordWait and
// kSysWordWake of kern/word_wait.h). There pv_wait(p, v) sleeps in the kernel on the aligned
// 32-bit word holding the byte p while that word still holds what it held when its byte read v,
// and the kick wakes that word's sleepers: the kick names the byte it follows (the lock byte,
// or the woken node's pv_state), not only a CPU. The kernel checks the word and queues the
// sleeper under the lock its wake takes, so a wake after the change is never lost; a vCPU
// whose threads all sleep runs its idle thread, which halts. An Env with neither (the host
// tests' plain Env) yields instead of halting: the lock is then a queued lock whose waiters
// give up their CPU after the bound.
//
// Ordering of the two Dekker pairs (x86 locked instructions are a total order):
//   - a queued waiter xchg's its state to halted, then reads `waiting`; the predecessor xchg's
//     `waiting` to 0, then cmpxchg's the state halted -> running and kicks on success: either the
//     waiter sees waiting == 0 and does not halt, or the predecessor sees halted and kicks.
//   - the head inserts its hash entry, then xchg's the byte to kPvqSlow; the release's cmpxchg
//     fails on kPvqSlow and only then searches the hash, so it finds the entry. The head re-inserts
//     only after it saw the byte leave kPvqSlow, which the release does after removing the entry:
//     at most one entry per lock.
#pragma once

#include "atomic_ops.h"
#include "lock.h"

namespace spinlab::spinlock {

constexpr uint8_t kPvqLocked = 1;
constexpr uint8_t kPvqSlow = 3;  // locked, and a halted head is in the hash
constexpr uint32_t kPvqDefaultSpinBound = 1u << 15;  // Linux's SPIN_THRESHOLD
constexpr uint32_t kPvqPrevCheckMask = 255;           // check the predecessor every 256 loops

// McsNode::pv_state
constexpr uint8_t kPvRunning = 0;
constexpr uint8_t kPvHalted = 1;  // a queued waiter halted (or about to): kick it at hand-over
constexpr uint8_t kPvHashed = 2;  // the queue head halted, in the hash: the release kicks it

// What the lock tells Env::pv_count (the per-CPU PvLockCounters of perfdata.h).
enum class PvEvent { kHalt, kKick, kSpuriousWakeup, kSteal };

// The Env methods this lock calls beyond algorithms.h's list; each is optional:
//   bool pv_wait(const uint8_t* p, uint8_t v)   halt this vCPU while *p == v until kicked;
//                                               true if it halted (or was about to when kicked)
//   void pv_kick(uint32_t cpu)                  wake that CPU from pv_wait
//   void pv_count(PvEvent e)                    count an event on this CPU
//   uint32_t pvqspin_spin_bound()               spins before halting (>= 1)
// or, instead of pv_wait and pv_kick, the futex-like pair of ring 3 (PvWordEnv):
//   bool word_wait(const uint32_t* w, uint32_t v)   sleep while *w == v until a word_wake(w);
//                                                   true if it slept
//   void word_wake(const uint32_t* w)               wake every sleeper on w
template <class Env>
concept PvWaitEnv = requires(Env& e, const uint8_t* p) {
    static_cast<bool>(e.pv_wait(p, uint8_t(0)));
    e.pv_kick(uint32_t(0));
};
template <class Env>
concept PvWordEnv = requires(Env& e, const uint32_t* w) {
    static_cast<bool>(e.word_wait(w, uint32_t(0)));
    e.word_wake(w);
};
template <class Env>
concept PvCountEnv = requires(Env& e) { e.pv_count(PvEvent::kHalt); };
template <class Env>
concept PvBoundEnv = requires(Env& e) { static_cast<uint32_t>(e.pvqspin_spin_bound()); };

// The aligned 32-bit word that holds the byte p (x86 is little-endian: byte i is bits 8i..8i+7).
inline const uint32_t* pvq_word_of(const uint8_t* p) {
    return reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
}

template <class Env>
inline bool pvq_wait(Env& env, const uint8_t* p, uint8_t v) {
    if constexpr (PvWaitEnv<Env>) {
        return env.pv_wait(p, v);
    } else if constexpr (PvWordEnv<Env>) {
        // Sleep while the whole word is as it was when its byte read v: a change of the byte
        // (or of a neighbour, which only costs a re-check) before the kernel's check skips it.
        const uint32_t* w = pvq_word_of(p);
        const uint32_t seen = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        const unsigned shift = 8u * unsigned(reinterpret_cast<uintptr_t>(p) & 3);
        if (uint8_t(seen >> shift) != v) return false;
        return env.word_wait(w, seen);
    } else {
        env.yield_to(kNoCpu);  // no halt here: give the CPU away once, then spin again
        return false;
    }
}

// Wakes the waiter of byte p, which runs on cpu; called after the store to p that ends its wait.
template <class Env>
inline void pvq_kick(Env& env, uint32_t cpu, const uint8_t* p) {
    if constexpr (PvWaitEnv<Env>) env.pv_kick(cpu);
    else if constexpr (PvWordEnv<Env>) env.word_wake(pvq_word_of(p));
}

template <class Env>
inline void pvq_count(Env& env, PvEvent e) {
    if constexpr (PvCountEnv<Env>) env.pv_count(e);
}

template <class Env>
inline uint32_t pvq_spin_bound(Env& env) {
    if constexpr (PvBoundEnv<Env>) {
        const uint32_t b = env.pvqspin_spin_bound();
        return b ? b : 1;
    } else {
        return kPvqDefaultSpinBound;
    }
}

// --- the hash: lock -> the node of its halted queue head ------------------------------------
// One entry per lock whose head is halted: at most one per CPU per nesting level. Open
// addressing with linear probing over the whole table; an entry is claimed by a cmpxchg of its
// lock field and freed by storing null there.
struct PvHashEntry {
    Lock* lock;
    McsNode* node;
};
constexpr uint32_t kPvHashEntries = 1024;  // 64 CPUs x 16 nodes each (kern/spinlock.cc's pool)

inline PvHashEntry* pv_hash_table() {
    alignas(64) static PvHashEntry table[kPvHashEntries];
    return table;
}

inline uint32_t pv_hash_start(const Lock* l) {
    const uint64_t h = (uint64_t(reinterpret_cast<uintptr_t>(l)) >> 4) * 0x9E3779B97F4A7C15ull;
    return uint32_t(h >> 54) & (kPvHashEntries - 1);  // top 10 bits
}

// Claims an entry for l -> node; nullptr when the table is full (the head then keeps spinning).
inline PvHashEntry* pv_hash_insert(Lock& l, McsNode* node) {
    PvHashEntry* t = pv_hash_table();
    const uint32_t start = pv_hash_start(&l);
    for (uint32_t i = 0; i < kPvHashEntries; i++) {
        PvHashEntry* e = &t[(start + i) & (kPvHashEntries - 1)];
        Lock* expected = nullptr;
        if (load_relaxed(&e->lock) == nullptr &&
            __atomic_compare_exchange_n(&e->lock, &expected, &l, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            store_relaxed(&e->node, node);  // before the caller's xchg of the byte publishes it
            return e;
        }
    }
    return nullptr;
}

// The release's side: finds l's entry (there is one: the byte said kPvqSlow), frees it and
// returns its node.
template <class Env>
inline McsNode* pv_hash_take(Lock& l, Env& env) {
    PvHashEntry* t = pv_hash_table();
    const uint32_t start = pv_hash_start(&l);
    for (uint32_t i = 0;; i++) {
        PvHashEntry* e = &t[(start + i) & (kPvHashEntries - 1)];
        if (load_acquire(&e->lock) == &l) {
            McsNode* node = load_relaxed(&e->node);
            store_release(&e->lock, static_cast<Lock*>(nullptr));
            return node;
        }
        if ((i & (kPvHashEntries - 1)) == kPvHashEntries - 1) env.relax();  // cannot happen
    }
}

// --- the lock ---------------------------------------------------------------------------------

inline bool pvq_try_acquire(Lock& l, McsNode* node) {
    if (load_relaxed(&l.mcs_tail) != nullptr) return false;  // waiters queue: join them
    uint8_t expected = 0;
    if (!__atomic_compare_exchange_n(&l.word.pvq_locked, &expected, kPvqLocked, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return false;
    l.mcs_owner = node;  // the kernel frees the caller's node at release (kern/spinlock.cc)
    return true;
}

inline bool pvq_take_byte(Lock& l) {
    uint8_t expected = 0;
    return load_relaxed(&l.word.pvq_locked) == 0 &&
           __atomic_compare_exchange_n(&l.word.pvq_locked, &expected, kPvqLocked, false,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

// Whether the vCPU ahead of us is not running: its node says it halted, or the Env says its
// vCPU is off its host CPU. A stale read (the node handed over and reused) only moves a halt.
template <class Env>
inline bool pvq_prev_off(const McsNode* prev, uint32_t prev_cpu, Env& env) {
    return load_relaxed(&prev->pv_state) != kPvRunning || env.vcpu_is_off(prev_cpu);
}

// A queued waiter behind prev: returns once prev made us the head (node->waiting == 0).
template <class Env>
inline void pvq_wait_node(Lock& l, McsNode* node, const McsNode* prev, uint32_t prev_cpu,
                          Env& env, uint64_t& spins) {
    const uint32_t bound = pvq_spin_bound(env);
    for (;;) {
        for (uint32_t loop = 0; loop < bound; loop++) {
            if (!load_acquire(&node->waiting)) return;
            if ((loop & kPvqPrevCheckMask) == 0 && pvq_prev_off(prev, prev_cpu, env)) break;
            env.relax();
            if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
        }
        __atomic_exchange_n(&node->pv_state, kPvHalted, __ATOMIC_SEQ_CST);
        if (!load_acquire(&node->waiting)) {
            store_relaxed(&node->pv_state, kPvRunning);
            return;
        }
        const bool halted = pvq_wait(env, &node->pv_state, kPvHalted);
        const uint8_t was = __atomic_exchange_n(&node->pv_state, kPvRunning, __ATOMIC_SEQ_CST);
        if (halted) {
            pvq_count(env, PvEvent::kHalt);
            if (was == kPvHalted && load_acquire(&node->waiting))
                pvq_count(env, PvEvent::kSpuriousWakeup);
        }
        env.spin_check(l, ++spins);  // the lockup detector, at every wake-up
    }
}

// The queue head: returns holding the byte.
template <class Env>
inline void pvq_wait_head(Lock& l, McsNode* node, Env& env, uint64_t& spins) {
    const uint32_t bound = pvq_spin_bound(env);
    for (;;) {
        for (uint32_t loop = 0; loop < bound; loop++) {
            if (pvq_take_byte(l)) return;
            env.relax();
            if ((++spins & (kSpinCheckInterval - 1)) == 0) env.spin_check(l, spins);
        }
        PvHashEntry* e = pv_hash_insert(l, node);
        if (e == nullptr) continue;  // no room to be found by the release: spin on
        store_relaxed(&node->pv_state, kPvHashed);  // successors halt early behind us
        if (__atomic_exchange_n(&l.word.pvq_locked, kPvqSlow, __ATOMIC_SEQ_CST) == 0) {
            // It was free: ours. Nobody saw kPvqSlow without a holder: take the entry back.
            store_relaxed(&l.word.pvq_locked, kPvqLocked);
            store_release(&e->lock, static_cast<Lock*>(nullptr));
            store_relaxed(&node->pv_state, kPvRunning);
            return;
        }
        // Held: its release finds us in the hash and kicks us. Halt until the byte leaves
        // kPvqSlow; a wake-up before that (spurious) halts again, still in the hash.
        for (;;) {
            const bool halted = pvq_wait(env, &l.word.pvq_locked, kPvqSlow);
            env.spin_check(l, ++spins);  // the lockup detector, at every wake-up
            const bool still = load_acquire(&l.word.pvq_locked) == kPvqSlow;
            if (halted) {
                pvq_count(env, PvEvent::kHalt);
                if (still) pvq_count(env, PvEvent::kSpuriousWakeup);
            }
            if (!still) break;
        }
        store_relaxed(&node->pv_state, kPvRunning);
        // Freed (and out of the hash): take it, or, if a stealer was first, spin again.
    }
}

// Returns the spins (loops and halts while queued; 0 when the steal won).
template <class Env>
inline uint64_t pvq_acquire_contended(Lock& l, McsNode* node, Env& env) {
    uint64_t spins = 0;
    // The one steal attempt, before queueing.
    const bool queued = load_relaxed(&l.mcs_tail) != nullptr;
    if (pvq_take_byte(l)) {
        if (queued) pvq_count(env, PvEvent::kSteal);
        l.mcs_owner = node;
        return spins;
    }
    node->next = nullptr;
    node->cpu = env.cpu();
    store_relaxed(&node->pv_state, kPvRunning);
    store_relaxed(&node->waiting, 1u);
    McsNode* prev = __atomic_exchange_n(&l.mcs_tail, node, __ATOMIC_ACQ_REL);
    if (prev != nullptr) {
        // Read before we link: once linked, the predecessor may hand over and reuse its node.
        const uint32_t prev_cpu = load_relaxed(&prev->cpu);
        store_release(&prev->next, node);
        pvq_wait_node(l, node, prev, prev_cpu, env, spins);
    }
    pvq_wait_head(l, node, env, spins);
    // Holding the byte: leave the queue, making our successor (if any) the head.
    McsNode* next = load_acquire(&node->next);
    if (next == nullptr) {
        McsNode* expected = node;
        if (!__atomic_compare_exchange_n(&l.mcs_tail, &expected, nullptr, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED)) {
            // A successor swapped itself in but has not linked yet: wait the few instructions.
            while ((next = load_acquire(&node->next)) == nullptr) env.relax();
        }
    }
    if (next != nullptr) {
        const uint32_t next_cpu = load_relaxed(&next->cpu);
        __atomic_exchange_n(&next->waiting, 0u, __ATOMIC_SEQ_CST);
        uint8_t halted = kPvHalted;
        if (__atomic_compare_exchange_n(&next->pv_state, &halted, kPvRunning, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            pvq_kick(env, next_cpu, &next->pv_state);
            pvq_count(env, PvEvent::kKick);
        }
    }
    l.mcs_owner = node;
    return spins;
}

template <class Env>
inline void pvq_release(Lock& l, Env& env) {
    uint8_t expected = kPvqLocked;
    if (__atomic_compare_exchange_n(&l.word.pvq_locked, &expected, uint8_t(0), false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        return;
    // kPvqSlow: a halted head waits in the hash. Take its node out, free the byte, kick it.
    McsNode* head = pv_hash_take(l, env);
    const uint32_t cpu = load_relaxed(&head->cpu);
    store_release(&l.word.pvq_locked, uint8_t(0));
    pvq_kick(env, cpu, &l.word.pvq_locked);
    pvq_count(env, PvEvent::kKick);
}

inline bool pvq_is_locked(const Lock& l) { return load_relaxed(&l.word.pvq_locked) != 0; }

}  // namespace spinlab::spinlock
