// kern/spinlock.h: the kernel's spinlock, as the seed's WRK macros do it: `lock bts` to take
// the lock, and when that fails spin *reading* the word with `pause` until it looks free, then
// try again (test-and-test-and-set). Every lock has a name and records its holder CPU and the
// call site that took it, for the lockup detector and for panics.
//
// Two entry points, as in Linux:
//   spin_lock / spin_unlock          preemption off while held; interrupts untouched. For locks
//                                    never taken from an interrupt handler.
//   spin_lock_irqsave / ..._irqrestore  interrupts off while held (and so no preemption). For
//                                    locks an interrupt handler may take (scheduler, console).
// RAII guards (SpinGuard, SpinGuardIrq) pair them on every path.
#pragma once
#include <stdint.h>

#include "prcb.h"

struct Spinlock {
    volatile uint32_t word;    // bit 0 set: held
    uint32_t holder_cpu;       // kNoCpu when free; written by the holder only
    const char* name;          // given at init; never changes
    const void* site;          // return address of the acquisition, for diagnostics
    uint64_t acquired;         // times taken (plain increment by the holder, under the lock)
};

#define SPINLOCK_INIT(n) {0, kNoCpu, n, nullptr, 0}

void spin_init(Spinlock* l, const char* name);
void spin_lock(Spinlock* l);
void spin_unlock(Spinlock* l);
[[nodiscard]] uint64_t spin_lock_irqsave(Spinlock* l);
void spin_unlock_irqrestore(Spinlock* l, uint64_t flags);
bool spin_holding(const Spinlock* l);   // held by this CPU

void preempt_disable();
void preempt_enable();

// For sleep_on only: give up / take back a lock without touching the interrupt flag, keeping
// the preemption count balanced (the caller's spin_lock or spin_lock_irqsave pairs with its
// own unlock later).
void spin_release_raw(Spinlock* l);
void spin_acquire_raw(Spinlock* l);

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
