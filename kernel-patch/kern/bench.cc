// kern/bench.cc: see bench.h.
#include "bench.h"

#include "../arch/x86.h"
#include "console.h"
#include "kvm.h"
#include "lapic.h"
#include "lockstat.h"
#include "spinlock.h"

namespace {

constexpr int kBatch = 1000;     // pairs per timed sample: the two rdtscs amortised to < 0.1
constexpr int kSamples = 301;    // odd: the median is one sample
constexpr int kWarmup = 20000;
// Under the build machines' nested KVM a pair costs ~200 us (guest ring 0 is ~750x slow), so
// warmup and sampling also stop at these budgets; the line reports how many samples it took.
constexpr uint64_t kWarmupSeconds = 1, kSampleSeconds = 5;
constexpr int kMinSamples = 11;

void sort(uint64_t* v, int n) {  // insertion sort: 301 values, once
    for (int i = 1; i < n; i++) {
        uint64_t x = v[i];
        int j = i - 1;
        for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
        v[j + 1] = x;
    }
}

// Batch cycles / kBatch with two decimals, without floating point (the kernel has none).
struct Fixed2 {
    uint64_t whole, hundredths;
};
Fixed2 per_pair(uint64_t batch_cycles) {
    const uint64_t x100 = (batch_cycles * 100 + kBatch / 2) / kBatch;
    return {x100 / 100, x100 % 100};
}

[[noreturn]] void bench_spinlock() {
    Spinlock l;
    spin_init(&l, "bench");
    const uint64_t warm_end = arch::rdtsc_lfence() + g_tsc_hz * kWarmupSeconds;
    for (int i = 0; i < kWarmup && (i & 255 || arch::rdtsc_lfence() < warm_end); i++) {
        spin_lock(&l);
        spin_unlock(&l);
    }
    static uint64_t samples[kSamples];
    const uint64_t end = arch::rdtsc_lfence() + g_tsc_hz * kSampleSeconds;
    int n = 0;
    for (; n < kSamples && (n < kMinSamples || arch::rdtsc_lfence() < end); n++) {
        const uint64_t t0 = arch::rdtsc_lfence();
        for (int i = 0; i < kBatch; i++) {
            spin_lock(&l);
            spin_unlock(&l);
        }
        samples[n] = arch::rdtsc_lfence() - t0;
    }
    sort(samples, n);
    const Fixed2 med = per_pair(samples[n / 2]);
    const Fixed2 p10 = per_pair(samples[n / 10]);
    const Fixed2 p90 = per_pair(samples[n * 9 / 10]);
    const Fixed2 lo = per_pair(samples[0]);
    kprintf("BENCH {\"bench\":\"spinlock\",\"algorithm\":\"%s\",\"instrument\":%u,"
            "\"clock\":\"%s\",\"pause\":\"%s\",\"cpus\":%u,\"hypervisor\":\"%s\","
            "\"tsc_hz\":%lu,\"batch\":%d,\"samples\":%d,\"median_cycles\":%lu.%02lu,"
            "\"p10_cycles\":%lu.%02lu,\"p90_cycles\":%lu.%02lu,\"min_cycles\":%lu.%02lu}\n",
            spinlab::lock_algorithm_name(g_lockcfg.algorithm), uint32_t(spinlab::lockstat::kBuildLevel),
            spinlab::clock_source_name(g_lockcfg.clock), g_lockcfg.pause ? "on" : "off", g_ncpus,
            g_kvm.signature, g_tsc_hz, kBatch, n, med.whole, med.hundredths, p10.whole,
            p10.hundredths, p90.whole, p90.hundredths, lo.whole, lo.hundredths);
    qemu_exit(kExitPass);
}

}  // namespace

void bench_run(const char* which) {
    if (which[0] == 's') bench_spinlock();  // "spinlock": the only choice bootopts accepts
    kprintf("bench: unknown benchmark '%s'\n", which);
    qemu_exit(kExitFail);
}
