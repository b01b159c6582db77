// selftest/clock_test.cc: the HPET the clock publications carry as their reference is there and
// counts at the rate it states, against the TSC (both follow the host's clock under QEMU).
#include "../arch/x86.h"
#include "../kern/hpet.h"
#include "../kern/lapic.h"
#include "../kern/selftest.h"

namespace {

void hpet_counts_at_its_stated_rate() {
    TEST_CHECK(hpet_present());
    if (!hpet_present()) return;
    TEST_CHECK(hpet_period_fs() > 0 && hpet_period_fs() <= 100'000'000u);
    const uint64_t t0 = arch::rdtsc_lfence(), h0 = hpet_read();
    while (arch::rdtsc_lfence() - t0 < g_tsc_hz / 50) arch::pause();  // 20 ms
    const uint64_t t1 = arch::rdtsc_lfence(), h1 = hpet_read();
    TEST_CHECK(h1 > h0);
    // ns by each clock; within 2 % (QEMU's TCG moves the guest's TSC ahead by up to a few
    // thousand ppm when vCPUs read it at once; the LAPIC timer calibration is good to ~0.1 %)
    const uint64_t tsc_ns = (t1 - t0) * 1'000'000'000ull / g_tsc_hz;
    const uint64_t hpet_ns = (h1 - h0) * hpet_period_fs() / 1'000'000;
    TEST_CHECK(hpet_ns * 100 > tsc_ns * 98 && hpet_ns * 100 < tsc_ns * 102);
}

const SelfTest kTests[] = {
    {"hpet_counts_at_its_stated_rate", hpet_counts_at_its_stated_rate},
};

}  // namespace

extern const SelfTestSuite kSuiteClock = {"clock", kTests, sizeof kTests / sizeof kTests[0]};
