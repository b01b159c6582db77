// selftest/vcpu_state_test.cc: vcpu_off() (kern/vcpu_off.h), the guest's reader of
// the host-written vCPU state area.
//
// Suite "vcpu_state" (in every run): what the guest alone can check. An index out of range
// answers false; without a host writer (no publisher bit) the host word of every CPU reads 0.
//
// Suite "vcpu_state_host" (only when named: it needs the host): the guest sees the host's
// word move. Booted with the shared region while `spinlab-load freeze --vcpu-state` freezes
// vCPU 1 on a schedule (hypervisor-hooks/vcpu_state/vcpu_state_integration_test.cc does both), it keeps
// CPU 1 busy, samples vcpu_off(1) and (0) from CPU 0 for a few seconds, and requires
// several separate "preempted" spells of CPU 1, time between them, and none for CPU 0 (which
// the host never freezes, and which is running whenever it reads).
#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/kvm.h"
#include "../kern/lapic.h"
#include "../kern/prcb.h"
#include "../kern/region.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/vcpu_off.h"
#include "spinlab/vcpu_state.h"

namespace {

void out_of_range_is_not_preempted() {
    const uint32_t bad[] = {g_ncpus, g_ncpus + 1, kMaxCpus, kMaxCpus + 7, kNoCpu, 0x80000000u};
    for (uint32_t cpu : bad) {
        TEST_CHECK(!vcpu_off(cpu));
        TEST_CHECK_EQ(vcpu_state_host_bits(cpu), 0);
    }
}

void no_host_writer_reads_running() {
    if (vcpu_state_publishers() != 0) {
        kprintf("vcpu_state: a host writer is attached (publishers 0x%x): words may be set\n",
                vcpu_state_publishers());
        return;
    }
    for (uint32_t cpu = 0; cpu < g_ncpus; cpu++) TEST_CHECK_EQ(vcpu_state_host_bits(cpu), 0);
    // Without steal time nothing else can say preempted either.
    if (!g_kvm.steal_time)
        for (uint32_t cpu = 0; cpu < g_ncpus; cpu++) TEST_CHECK(!vcpu_off(cpu));
}

// --- vcpu_state_host -------------------------------------------------------------------------

constexpr uint64_t kWaitForHostS = 60;  // the host test starts spinlab-load after QEMU
constexpr uint64_t kSampleS = 4;

bool stop_spinner;

void spin_until_stopped(void*) {
    while (!__atomic_load_n(&stop_spinner, __ATOMIC_RELAXED)) arch::pause();
}

struct Samples {
    uint64_t total = 0, cpu1_off = 0, cpu1_spells = 0, cpu0_off = 0;
};

Samples sample_for(uint64_t seconds) {
    Samples s;
    bool last = false;
    const uint64_t end = arch::rdtsc_lfence() + g_tsc_hz * seconds;
    while (arch::rdtsc_lfence() < end) {
        const bool p1 = vcpu_off(1);
        s.total++;
        s.cpu1_off += p1;
        s.cpu1_spells += p1 && !last;
        s.cpu0_off += vcpu_off(0);
        last = p1;
        for (int i = 0; i < 64; i++) arch::pause();
    }
    return s;
}

void host_freezes_are_seen() {
    TEST_CHECK(g_ncpus >= 2);
    if (g_ncpus < 2) return;
    if (!region_vcpu_state()) {
        selftest_fail(__FILE__, __LINE__, "no shared region: boot with the ivshmem device");
        return;
    }
    const uint64_t t0 = arch::rdtsc_lfence();
    while (!(vcpu_state_publishers() & spinlab::kVcpuStatePublisherFreezes)) {
        if (arch::rdtsc_lfence() - t0 > g_tsc_hz * kWaitForHostS) {
            selftest_fail(__FILE__, __LINE__, "no host freeze publisher within %lu s", kWaitForHostS);
            return;
        }
        sleep_us(10000);
    }
    kprintf("vcpu_state: host publishers 0x%x after %lu ms\n", vcpu_state_publishers(),
            (arch::rdtsc_lfence() - t0) / (g_tsc_hz / 1000));
    thread_set_affinity(0);
    __atomic_store_n(&stop_spinner, false, __ATOMIC_RELAXED);
    Thread* spinner = thread_spawn("vcpu1-spin", spin_until_stopped, nullptr, 1);
    TEST_CHECK(spinner != nullptr);
    const Samples s = sample_for(kSampleS);
    __atomic_store_n(&stop_spinner, true, __ATOMIC_RELAXED);
    if (spinner) thread_join(spinner);
    thread_set_affinity(kAnyCpu);
    kprintf("vcpu_state: %lu samples in %lu s: cpu 1 preempted in %lu (%lu spells), cpu 0 in %lu\n",
            s.total, kSampleS, s.cpu1_off, s.cpu1_spells, s.cpu0_off);
    TEST_CHECK(s.cpu1_spells >= 2);             // the host's freezes came and went, more than once
    TEST_CHECK(s.cpu1_off < s.total);           // and CPU 1 ran between them
    TEST_CHECK_EQ(s.cpu0_off, 0);               // never frozen, and running whenever it reads
}

const SelfTest kTests[] = {
    {"out_of_range_is_not_preempted", out_of_range_is_not_preempted},
    {"no_host_writer_reads_running", no_host_writer_reads_running},
};
const SelfTest kHostTests[] = {
    {"host_freezes_are_seen", host_freezes_are_seen},
};

}  // namespace

extern const SelfTestSuite kSuiteVcpuState = {"vcpu_state", kTests, sizeof kTests / sizeof kTests[0]};
extern const SelfTestSuite kSuiteVcpuStateHost = {"vcpu_state_host", kHostTests,
                                                  sizeof kHostTests / sizeof kHostTests[0],
                                                  /*by_name_only=*/true};
