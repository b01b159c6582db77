// selftest/spinlock_test.cc: the kernel spinlock keeps mutual exclusion on every CPU.
#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/lapic.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/spinlock.h"

void preempt_count_survives_migration_at_every_boundary();  // preempt_test.cc
void pvqspin_kick_wakes_a_waiter_halted_with_interrupts_off();  // pvqspin_kick_test.cc

namespace {

Spinlock counter_lock = SPINLOCK_INIT("selftest");
volatile uint64_t counter;   // counter_lock must be held; updated non-atomically on purpose
volatile uint32_t inside;    // threads inside the critical section: must never exceed 1
constexpr int kIters = 20000;
// Fair locks (lock=ticket, mcs) hand the lock to the next waiter in line even when the host
// has descheduled that vCPU: with more vCPUs than host cores every handover can wait for a
// host time slice (lock-waiter preemption). So each thread stops at kIters or at the
// deadline, and counts what it did; the checks compare against that count.
uint64_t deadline;
uint64_t total;              // sum of the threads' iterations (atomic adds)

void hammer(int, void* irq) {
    int i = 0;
    for (; i < kIters && (i < 16 || arch::rdtsc_lfence() < deadline); i++) {  // >= 16 each
        uint64_t f = 0;
        if (irq) f = spin_lock_irqsave(&counter_lock);
        else spin_lock(&counter_lock);
        if (__atomic_add_fetch(&inside, 1, __ATOMIC_RELAXED) != 1)
            selftest_fail(__FILE__, __LINE__, "two CPUs inside the critical section");
        uint64_t v = counter;  // read, spin a little, write: a lost update shows as a short total
        for (int k = 0; k < 8; k++) arch::pause();
        counter = v + 1;
        __atomic_sub_fetch(&inside, 1, __ATOMIC_RELAXED);
        if (irq) spin_unlock_irqrestore(&counter_lock, f);
        else spin_unlock(&counter_lock);
    }
    __atomic_fetch_add(&total, uint64_t(i), __ATOMIC_RELAXED);
}

void mutual_exclusion(bool irq) {
    counter = 0;
    total = 0;
    deadline = arch::rdtsc_lfence() + g_tsc_hz * 3;
    int n = int(g_ncpus) * 2;
    run_on_cpus(n, hammer, irq ? reinterpret_cast<void*>(1) : nullptr);
    TEST_CHECK(total > 0);
    TEST_CHECK_EQ(counter, total);
    TEST_CHECK(!spin_is_locked(&counter_lock));
    TEST_CHECK_EQ(spin_holder_cpu(&counter_lock), kNoCpu);
}

void mutual_exclusion_plain() { mutual_exclusion(false); }
void mutual_exclusion_irqsave() { mutual_exclusion(true); }

void records_holder_and_restores_irqs() {
    Spinlock l;
    spin_init(&l, "probe");
    TEST_CHECK(arch::irqs_enabled());
    uint64_t f = spin_lock_irqsave(&l);
    TEST_CHECK(!arch::irqs_enabled());
    TEST_CHECK_EQ(spin_holder_cpu(&l), cpu_number());
    TEST_CHECK(spin_holding(&l));
    TEST_CHECK(spin_holder_site(&l) != nullptr);
    spin_unlock_irqrestore(&l, f);
    TEST_CHECK(arch::irqs_enabled());
    TEST_CHECK(!spin_holding(&l));
    spin_lock(&l);
    TEST_CHECK(arch::irqs_enabled());         // the plain variant leaves interrupts alone
    TEST_CHECK(this_cpu()->preempt_disable > 0);  // ...but holds off preemption
    spin_unlock(&l);
}

// Two locks of classes the order puts proc_table first, sched second (lockclass.h); only this
// test takes them, so taking them the wrong way round is safe.
Spinlock order_first = SPINLOCK_INIT("proc_table");
Spinlock order_second = SPINLOCK_INIT("sched");

bool contains(const char* s, const char* part) {
    for (; *s; s++) {
        const char *a = s, *b = part;
        while (*a && *b && *a == *b) a++, b++;
        if (!*b) return true;
    }
    return false;
}

void lock_order_is_checked() {
    TEST_CHECK(g_lock_order_checks);
    LockOrderReport r{};
    g_lock_order_capture = &r;
    spin_lock(&order_first);  // in order: nothing to report
    spin_lock(&order_second);
    spin_unlock(&order_second);
    spin_unlock(&order_first);
    TEST_CHECK(r.taken == nullptr);
    spin_lock(&order_second);  // against the order: reported, with both names and sites
    spin_lock(&order_first);
    spin_unlock(&order_first);
    spin_unlock(&order_second);
    g_lock_order_capture = nullptr;
    TEST_CHECK(r.taken != nullptr);
    if (!r.taken) return;
    kprintf("  reported: %s\n", r.message);
    TEST_CHECK(contains(r.taken, "proc_table"));
    TEST_CHECK(contains(r.held, "sched"));
    TEST_CHECK(r.taken_site != nullptr && r.held_site != nullptr && r.taken_site != r.held_site);
    TEST_CHECK(contains(r.message, "takes 'proc_table' (class proc_table, rank 40)"));
    TEST_CHECK(contains(r.message, "while holding 'sched' (class sched, rank 60)"));
}

const SelfTest kTests[] = {
    {"mutual_exclusion_plain", mutual_exclusion_plain},
    {"mutual_exclusion_irqsave", mutual_exclusion_irqsave},
    {"records_holder_and_restores_irqs", records_holder_and_restores_irqs},
    {"lock_order_is_checked", lock_order_is_checked},
    {"preempt_count_survives_migration_at_every_boundary", preempt_count_survives_migration_at_every_boundary},
    {"pvqspin_kick_wakes_a_waiter_halted_with_interrupts_off", pvqspin_kick_wakes_a_waiter_halted_with_interrupts_off},
};

}  // namespace

extern const SelfTestSuite kSuiteSpinlock = {"spinlock", kTests, sizeof kTests / sizeof kTests[0]};
