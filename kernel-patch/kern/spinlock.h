// kern/spinlock.h: the kernel's spinlock: one of eight algorithms chosen at boot (lock=tas,
// ticket, mcs, pv, pticket, pvmcs, student, pvqspin; spinlock/algorithms.h lists them), instrumented by
// lockstat (lockstat/, INSTRUMENT=0|1|2 at build time). Every lock has a name and a lock class
// (kern/lockclass.h) given when it is set up, and records its holder CPU and the call site that
// took it, for the lockup detector and for panics.
//
// Two entry points, as in Linux:
//   spin_lock / spin_unlock          preemption off while held; interrupts untouched. For locks
//                                    never taken from an interrupt handler.
//   spin_lock_irqsave / ..._irqrestore  interrupts off while held (and so no preemption). For
//                                    locks an interrupt handler may take (scheduler, console).
// RAII guards (SpinGuard, SpinGuardIrq) pair them on every path. The holder must release on
// the CPU it acquired on (both variants guarantee it: no preemption, so no migration).
//
// What one acquisition costs (lockstat/instrumented_lock.h has the table per level): one
// try (lock bts / lock cmpxchg); uncontended, two per-CPU increments and no timestamp;
// contended, a timestamp before the first spin and one when the lock is taken, and nothing in
// the spin loop but the relax (pause=) and a spin counter that calls the lockup detector every
// 65,536 spins. The queued locks (mcs, pvmcs, pvqspin) take a queue node from a small per-CPU pool.
//
// Lockup detector (lockup=<cycles>, 0 = off, default 2^34): a waiter still spinning after the
// bound prints the lock's name and class, its holder CPU and the holder's acquisition site,
// then keeps spinning and prints again after every further bound: a lockup is reported, never
// broken (the holder may be a preempted vCPU that will come back). g_lockup_reports counts
// the reports.
#pragma once
#include <stdint.h>

#include "../spinlock/lock.h"
#include "lockclass.h"
#include "prcb.h"

struct Spinlock {
    spinlab::spinlock::Lock core;  // word, holder_cpu, holder_site, name, class_id: lock.h
};

// Static initialisation; the class comes from the name at compile time, and a name that has
// no class in lockclass.h does not compile.
#define SPINLOCK_INIT(n)                                                                   \
    {                                                                                      \
        {{0}, kNoCpu, nullptr, nullptr, nullptr, (n), static_lock_class(n), 0, 0, kNoCpu, {}, 0} \
    }

void spin_init(Spinlock* l, const char* name);  // class from the name
void spin_init_class(Spinlock* l, const char* name, uint32_t class_id);  // e.g. user classes
void spin_lock(Spinlock* l);
void spin_unlock(Spinlock* l);
[[nodiscard]] uint64_t spin_lock_irqsave(Spinlock* l);
void spin_unlock_irqrestore(Spinlock* l, uint64_t flags);
bool spin_holding(const Spinlock* l);   // held by this CPU

// Diagnostics (racy reads, for tests and reports).
inline uint32_t spin_holder_cpu(const Spinlock* l) {
    return __atomic_load_n(&l->core.holder_cpu, __ATOMIC_RELAXED);
}
inline const void* spin_holder_site(const Spinlock* l) { return l->core.holder_site; }
inline const char* spin_name(const Spinlock* l) { return l->core.name; }
inline uint32_t spin_class(const Spinlock* l) { return l->core.class_id; }
bool spin_is_locked(const Spinlock* l);  // by anyone

void preempt_disable();
void preempt_enable();

// For sleep_on only: give up / take back a lock without touching the interrupt flag, keeping
// the preemption count balanced (the caller's spin_lock or spin_lock_irqsave pairs with its
// own unlock later).
void spin_release_raw(Spinlock* l);
void spin_acquire_raw(Spinlock* l);

// lock=pvqspin's halt and kick (kern/spinlock.cc says how no wake-up is lost): halt this vCPU
// while *p == v, with interrupts as the caller has them (true: it halted, or was about to when
// an NMI came); wake that CPU from it (KVM_HC_KICK_CPU with KVM's PV unhalt, else an NMI).
// Exported for the self-tests; the lock calls them through its Env.
bool spin_pv_wait(const uint8_t* p, uint8_t v);
void spin_pv_kick(uint32_t cpu);
// From the NMI handler, first thing (no %gs use): an NMI that interrupted spin_pv_wait between
// its check and its hlt resumes after the hlt (*rip moved there).
void spin_pv_nmi(uint64_t* rip);

extern uint64_t g_lockup_reports;   // lockup detector reports since boot (all CPUs)

// Lock order (lockclass.h): checked on every acquisition while g_lock_order_checks is set (the
// self-test kernel sets it before its first test). A violation panics with both locks' names,
// classes and acquisition sites.
extern bool g_lock_order_checks;
struct LockOrderReport {
    const char* held;           // the lock this CPU held, of the higher rank
    const void* held_site;
    const char* taken;          // the lock it took
    const void* taken_site;
    char message[240];          // what the panic would have said
};
// For the one self-test that breaks the order on purpose: while set, a violation is written
// here (the first one) instead of panicking, and the acquisition goes ahead.
extern LockOrderReport* volatile g_lock_order_capture;

class [[nodiscard]] SpinGuard {
public:
    explicit SpinGuard(Spinlock* l) : l_(l) { spin_lock(l_); }
    ~SpinGuard() { spin_unlock(l_); }
    SpinGuard(const SpinGuard&) = delete;
    SpinGuard& operator=(const SpinGuard&) = delete;
private:
    Spinlock* l_;
};

class [[nodiscard]] SpinGuardIrq {
public:
    explicit SpinGuardIrq(Spinlock* l) : l_(l), flags_(spin_lock_irqsave(l)) {}
    ~SpinGuardIrq() { spin_unlock_irqrestore(l_, flags_); }
    SpinGuardIrq(const SpinGuardIrq&) = delete;
    SpinGuardIrq& operator=(const SpinGuardIrq&) = delete;
private:
    Spinlock* l_;
    uint64_t flags_;
};
