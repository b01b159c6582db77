// selftest/sched_test.cc: preemption, sleep/wakeup, timed sleep, affinity.
#include "../arch/x86.h"
#include "../kern/lapic.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"

void current_thread_survives_migration_at_every_boundary();  // preempt_test.cc

namespace {

volatile bool stop;  // written by the test, read by the spinners
volatile uint64_t spins[2];

void spinner(void* p) {
    int i = int(uint64_t(p));
    while (!stop) {  // never yields: only the timer can take the CPU away
        uint64_t v = spins[i];
        spins[i] = v + 1;
    }
}

// Two threads that never yield, pinned to one CPU: both make progress only if the timer
// preempts them.
void preemption() {
    stop = false;
    spins[0] = 0;
    spins[1] = 0;
    int cpu = int(g_ncpus) - 1;
    Thread* a = thread_spawn("spin0", spinner, reinterpret_cast<void*>(0), cpu);
    Thread* b = thread_spawn("spin1", spinner, reinterpret_cast<void*>(1), cpu);
    uint64_t deadline = arch::rdtsc_lfence() + g_tsc_hz * 5;
    while ((spins[0] == 0 || spins[1] == 0) && arch::rdtsc_lfence() < deadline) sleep_us(10000);
    sleep_us(50000);
    stop = true;
    thread_join(a);
    thread_join(b);
    TEST_CHECK(spins[0] > 0);
    TEST_CHECK(spins[1] > 0);
    TEST_CHECK(a->switches_in + b->switches_in >= 3);  // at least one preemption happened
}

Spinlock chan_lock = SPINLOCK_INIT("selftest");
int chan_value;  // chan_lock must be held

void waiter(void*) {
    uint64_t f = spin_lock_irqsave(&chan_lock);
    while (chan_value == 0) sleep_on(&chan_value, &chan_lock);
    chan_value = 2;
    spin_unlock_irqrestore(&chan_lock, f);
}

void sleep_wakeup() {
    chan_value = 0;
    Thread* w = thread_spawn("waiter", waiter, nullptr);
    // Let it go to sleep. Not a fixed 20 ms: the host may not run the waiter's vCPU for longer
    // than that (seen under TCG on a loaded host); 5 s only catches a waiter that never sleeps.
    const uint64_t deadline = arch::rdtsc_lfence() + g_tsc_hz * 5;
    while (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) != ThreadState::kSleeping &&
           arch::rdtsc_lfence() < deadline)
        sleep_us(1000);
    TEST_CHECK(w->state == ThreadState::kSleeping);
    {
        SpinGuardIrq g(&chan_lock);
        chan_value = 1;
        wakeup(&chan_value);
    }
    thread_join(w);
    TEST_CHECK_EQ(chan_value, 2);
}

void timed_sleep() {
    uint64_t t0 = arch::rdtsc_lfence();
    sleep_us(50000);
    uint64_t us = (arch::rdtsc_lfence() - t0) / (g_tsc_hz / 1000000);
    TEST_CHECK(us >= 50000);
}

void migrate(void*) {
    for (uint32_t c = 0; c < g_ncpus; c++) {
        thread_set_affinity(int(c));
        for (int k = 0; k < 3; k++) {
            TEST_CHECK_EQ(cpu_number(), c);
            yield();
        }
    }
    thread_set_affinity(kAnyCpu);
}

void affinity_migration() {
    Thread* t = thread_spawn("migrate", migrate, nullptr);
    thread_join(t);
    TEST_CHECK_EQ(t->cpus_seen & ((g_ncpus == 64) ? ~0ull : ((1ull << g_ncpus) - 1)),
                  (g_ncpus == 64) ? ~0ull : ((1ull << g_ncpus) - 1));
}

void join_returns_exit_code_fn(void*) { thread_exit(42); }

void join_returns_exit_code() {
    Thread* t = thread_spawn("exit42", join_returns_exit_code_fn, nullptr);
    TEST_CHECK_EQ(thread_join(t), 42);
}

const SelfTest kTests[] = {
    {"preemption", preemption},
    {"sleep_wakeup", sleep_wakeup},
    {"timed_sleep", timed_sleep},
    {"affinity_migration", affinity_migration},
    {"join_returns_exit_code", join_returns_exit_code},
    {"current_thread_survives_migration_at_every_boundary", current_thread_survives_migration_at_every_boundary},
};

}  // namespace

extern const SelfTestSuite kSuiteSched = {"sched", kTests, sizeof kTests / sizeof kTests[0]};
