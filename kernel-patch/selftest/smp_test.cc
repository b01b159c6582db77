// selftest/smp_test.cc: every CPU in the MADT came online and runs threads.
#include "../kern/acpi.h"
#include "../arch/x86.h"
#include "../kern/bootopts.h"
#include "../kern/lapic.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"

namespace {

void all_cpus_online() {
    uint32_t expect = acpi_madt().ncpus < g_boot.maxcpus ? acpi_madt().ncpus : g_boot.maxcpus;
    TEST_CHECK_EQ(g_ncpus, expect);
    for (uint32_t i = 0; i < g_ncpus; i++) {
        TEST_CHECK(g_prcbs[i].online);
        TEST_CHECK_EQ(g_prcbs[i].number, i);
        TEST_CHECK(g_prcbs[i].self == &g_prcbs[i]);
    }
}

uint32_t ran_on[kMaxCpus * 2];

void record_cpu(int i, void*) { ran_on[i] = cpu_number(); }

void threads_run_on_every_cpu() {
    int n = int(g_ncpus) * 2;
    for (int i = 0; i < n; i++) ran_on[i] = kNoCpu;
    run_on_cpus(n, record_cpu, nullptr);
    for (int i = 0; i < n; i++) TEST_CHECK_EQ(ran_on[i], uint32_t(i) % g_ncpus);
}

void timer_ticks_on_every_cpu() {
    uint64_t before[kMaxCpus];
    for (uint32_t i = 0; i < g_ncpus; i++) before[i] = g_prcbs[i].ticks;
    // Every CPU ticks eventually: a vCPU's ticks need its host thread to run, which a loaded
    // host may not do for a while, so the bar is "within 5 s", not "within 100 ms".
    const uint64_t deadline = arch::rdtsc_lfence() + g_tsc_hz * 5;
    auto all_ticked = [&] {
        for (uint32_t i = 0; i < g_ncpus; i++)
            if (__atomic_load_n(&g_prcbs[i].ticks, __ATOMIC_RELAXED) == before[i]) return false;
        return true;
    };
    while (!all_ticked() && arch::rdtsc_lfence() < deadline) sleep_us(10000);
    for (uint32_t i = 0; i < g_ncpus; i++) TEST_CHECK(g_prcbs[i].ticks > before[i]);
}

const SelfTest kTests[] = {
    {"all_cpus_online", all_cpus_online},
    {"threads_run_on_every_cpu", threads_run_on_every_cpu},
    {"timer_ticks_on_every_cpu", timer_ticks_on_every_cpu},
};

}  // namespace

extern const SelfTestSuite kSuiteSmp = {"smp", kTests, sizeof kTests / sizeof kTests[0]};
