// kern/spinlock.cc: see spinlock.h.
#include "spinlock.h"

#include "console.h"
#include "sched.h"

namespace {

// lock bts: atomically set bit 0 and return its old value. The lock prefix makes the
// read-modify-write atomic and is a full barrier: nothing in the critical section moves above it.
inline bool test_and_set(volatile uint32_t* w) {
    bool was_set;
    asm volatile("lock btsl $0, %0" : "+m"(*w), "=@ccc"(was_set)::"memory");
    return was_set;
}

__attribute__((noinline)) void spin_slow(Spinlock* l) {
    // Contended: spin on a plain read so the cache line stays shared until the holder
    // releases, then retry the atomic. pause tells the CPU (and a hypervisor's pause-loop
    // exiting) that this is a spin-wait.
    do {
        while (l->word & 1) arch::pause();
    } while (test_and_set(&l->word));
}

inline void take(Spinlock* l, const void* site) {
    if (spin_holding(l)) panic("spinlock %s: recursive acquisition", l->name);
    if (test_and_set(&l->word)) spin_slow(l);
    l->holder_cpu = cpu_number();
    l->site = site;
    l->acquired++;
}

inline void give(Spinlock* l) {
    if (!spin_holding(l)) panic("spinlock %s: released by cpu %u, not the holder", l->name,
                                cpu_number());
    l->holder_cpu = kNoCpu;
    l->site = nullptr;
    // Release store: on x86 a plain store is not reordered with earlier loads or stores, so
    // the compiler barrier is all that keeps the critical section above this line.
    arch::barrier();
    l->word = 0;
}

}  // namespace

void spin_init(Spinlock* l, const char* name) {
    l->word = 0;
    l->holder_cpu = kNoCpu;
    l->name = name;
    l->site = nullptr;
    l->acquired = 0;
}

bool spin_holding(const Spinlock* l) {
    return (l->word & 1) && l->holder_cpu == cpu_number();
}

void preempt_disable() {
    this_cpu()->preempt_disable++;
    arch::barrier();
}

void preempt_enable() {
    arch::barrier();
    Prcb* c = this_cpu();
    if (--c->preempt_disable == 0 && c->resched_pending && arch::irqs_enabled()) {
        c->resched_pending = false;
        yield();
    }
}

void spin_lock(Spinlock* l) {
    preempt_disable();
    take(l, __builtin_return_address(0));
}

void spin_unlock(Spinlock* l) {
    give(l);
    preempt_enable();
}

uint64_t spin_lock_irqsave(Spinlock* l) {
    uint64_t flags = irq_save();
    this_cpu()->preempt_disable++;
    take(l, __builtin_return_address(0));
    return flags;
}

void spin_unlock_irqrestore(Spinlock* l, uint64_t flags) {
    give(l);
    this_cpu()->preempt_disable--;
    irq_restore(flags);
}

void spin_release_raw(Spinlock* l) {
    give(l);
    this_cpu()->preempt_disable--;
}

void spin_acquire_raw(Spinlock* l) {
    this_cpu()->preempt_disable++;
    take(l, __builtin_return_address(0));
}
