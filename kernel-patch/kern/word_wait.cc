// kern/word_wait.cc: the wait queue of kSysWordWait/kSysWordWake (word_wait.h). One table of
// waiters, one per thread at most, under one lock: waits are rare (a ring-3 lock's waiter after
// its spin bound), and a wake scans kMaxThreads slots.
#include "word_wait.h"

#include "../lib/user_range.h"
#include "address_space.h"
#include "proc.h"
#include "sched.h"
#include "spinlab/syscall.h"
#include "spinlock.h"

namespace {

struct Waiter {
    const AddressSpace* as;  // nullptr: a free slot
    uint64_t word;
    bool woken;
};

Spinlock g_word_wait_lock = SPINLOCK_INIT("word_wait");
Waiter g_waiters[kMaxThreads];  // guarded by g_word_wait_lock

}  // namespace

int64_t word_wait(Process* p, uint64_t word, uint32_t expected) {
    if ((word & 3) || !user_range_ok(word, 4)) return -spinlab::kErrFault;
    uint64_t f = spin_lock_irqsave(&g_word_wait_lock);
    uint32_t now = 0;
    if (int64_t r = copy_from_user(p->as, &now, word, 4)) {
        spin_unlock_irqrestore(&g_word_wait_lock, f);
        return r;
    }
    if (now != expected) {
        spin_unlock_irqrestore(&g_word_wait_lock, f);
        return 1;
    }
    Waiter* w = nullptr;
    for (Waiter& s : g_waiters)
        if (!s.as) {
            w = &s;
            break;
        }
    if (!w) {
        spin_unlock_irqrestore(&g_word_wait_lock, f);
        return -spinlab::kErrNoMem;
    }
    *w = Waiter{p->as, word, false};
    while (!w->woken) sleep_on(w, &g_word_wait_lock);  // sleeps with the lock dropped
    w->as = nullptr;
    spin_unlock_irqrestore(&g_word_wait_lock, f);
    return 0;
}

int64_t word_wake(Process* p, uint64_t word, uint64_t max) {
    if ((word & 3) || !user_range_ok(word, 4)) return -spinlab::kErrFault;
    int64_t n = 0;
    SpinGuardIrq g(&g_word_wait_lock);
    for (Waiter& s : g_waiters) {
        if (uint64_t(n) >= max) break;
        if (s.as == p->as && s.word == word && !s.woken) {
            s.woken = true;
            wakeup(&s);
            n++;
        }
    }
    return n;
}
