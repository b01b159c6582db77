// scripts/lttng-anchor/lttng_anchor.cc: the LTTng-UST side of the anchor
// (scripts/bench-lttng-anchor.sh builds and runs it inside a session that records to a file).
// Writes `warmup` untimed events, then `events` timed ones, each spinlab_anchor:spinlock with an
// 80-byte payload (spinlab_anchor_tp.h), as fast as it can from one thread, and prints one JSON
// object: TSC cycles per event (lfence; rdtsc around each batch of 10,000, as spinlab's side
// measures), ns per event at the TSC rate, and the thread's on-CPU time per event.
// The payload's fields come from the loop (no clock read of ours: LTTng reads its own clock
// for its event header, as spinlab's side reads the TSC for its own).
//   lttng_anchor EVENTS [WARMUP]
#include <lttng/tracepoint.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "spinlab_anchor_tp.h"

namespace {

constexpr uint64_t kBatch = 10000;

inline uint64_t lfence_rdtsc() {  // as kernel-patch/lockstat/clock.h's LfenceRdtsc
    uint32_t lo, hi;
    asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t(hi) << 32) | lo;
}

uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

double tsc_hz() {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = lfence_rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t c1 = lfence_rdtsc();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return double(c1 - c0) / s;
}

inline void write_events(uint64_t& i, uint64_t n) {
    spinlab_anchor_record r{};
    r.call_site = 0x401000;
    r.class_and_cpus = (uint64_t(3) << 32) | (1u << 16) | 1u;
    r.lhp_rules_flags = (4u << 16) | (2u << 8) | 1u;
    for (uint64_t k = 0; k < n; k++, i++) {
        r.lock_address = 0x7f0000001000ull + (i & 0x3F) * 64;
        r.acquire_tsc = i * 300;
        r.release_tsc = i * 300 + 200;
        r.wait_cycles = i & 0xFF;
        r.spin_count = 1 + (i & 7);
        lttng_ust_tracepoint(spinlab_anchor, spinlock, &r);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: lttng_anchor EVENTS [WARMUP]\n");
        return 2;
    }
    const uint64_t events = std::strtoull(argv[1], nullptr, 0) / kBatch * kBatch;
    const uint64_t warmup = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 100000;
    // The session was started before this process: LTTng-UST's constructor registered with the
    // session daemon (waiting up to LTTNG_UST_REGISTER_TIMEOUT) and got the enabled event. Wait
    // a little longer if it has not, and refuse to measure a disabled tracepoint.
    for (int t = 0; t < 500 && !lttng_ust_tracepoint_enabled(spinlab_anchor, spinlock); t++)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!lttng_ust_tracepoint_enabled(spinlab_anchor, spinlock)) {
        std::fprintf(stderr, "lttng_anchor: spinlab_anchor:spinlock is not enabled (no session?)\n");
        return 1;
    }
    const double hz = tsc_hz();
    uint64_t i = 0;
    write_events(i, warmup);
    uint64_t cycles = 0;
    const uint64_t cpu0 = thread_cpu_ns();
    for (uint64_t b = 0; b < events / kBatch; b++) {
        const uint64_t t0 = lfence_rdtsc();
        write_events(i, kBatch);
        cycles += lfence_rdtsc() - t0;
    }
    const uint64_t cpu_ns = thread_cpu_ns() - cpu0;
    std::printf(
        "{\"events\": %llu, \"warmup\": %llu, \"tsc_hz\": %.0f, \"cycles_per_event\": %.3f, "
        "\"ns_per_event\": %.3f, \"cpu_cycles_per_event\": %.3f, \"cpu_ns_per_event\": %.3f}\n",
        (unsigned long long)events, (unsigned long long)warmup, hz, double(cycles) / double(events),
        double(cycles) / hz * 1e9 / double(events), double(cpu_ns) * 1e-9 * hz / double(events),
        double(cpu_ns) / double(events));
    return 0;
}
