// kern/bench.cc: see bench.h.
#include "bench.h"

#include "../arch/x86.h"
#include "console.h"
#include "kvm.h"
#include "lapic.h"
#include "lockstat.h"
#include "locktrace.h"
#include "mem.h"
#include "prcb.h"
#include "spinlock.h"
#include "../locktrace/trace_session.h"

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
Fixed2 per_pair_of(uint64_t batch_cycles, uint64_t batch) {
    const uint64_t x100 = (batch_cycles * 100 + batch / 2) / batch;
    return {x100 / 100, x100 % 100};
}
Fixed2 per_pair(uint64_t batch_cycles) { return per_pair_of(batch_cycles, kBatch); }

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

// bench=traceevent: what writing one kernel-lock event costs the guest, in TSC cycles. Both
// batches of a sample run spin_lock, the facts of a contended acquisition (what WaitTracer stores
// while a session runs), spin_unlock on one lock with a session running; in one the hold is
// armed and its release writes a spinlock event through the kernel's own path
// (locktrace_spin_release: the sampling rules, claim, the 104-byte event, commit; the contention
// rule fires at SpinThreshold 1, ContentionSampleRate 1), in the other it is not (the release
// that writes no event). A sample's difference over its batch is the cycles of one event; the
// two batches run in either order on alternate samples, so a drift of the host's speed cancels.
#if SPINLAB_INSTRUMENT == 1
constexpr int kEventSamples = 401;

// mode 1: the release writes an event; 0: it writes none; 2: none, but the hold saves and
// restores the interrupt flag once (pushf; cli), as the event's path does around its write: the
// part of an event's cost that is the interrupt flag's, where the hypervisor makes cli costly.
inline void contended_pair(Spinlock* l, uint64_t acquire_tsc, uint8_t mode) {
    const uint8_t armed = mode == 1;
    spin_lock(l);
    if (mode == 2) irq_restore(irq_save());
    spinlab::spinlock::HoldTrace& t = l->core.trace;
    t.acquire_tsc = acquire_tsc;
    t.wait_cycles = 100;
    t.spins = 1;
    t.holder_steal_ns = t.waiter_steal_ns = 0;
    t.holder_cpu_start = t.holder_cpu_end = 0;
    t.contended = 1;
    t.wait_overflow = 0;
    t.lhp_class = 0;
    t.armed = armed;
    spin_unlock(l);
}

// Interrupts are off for the batch, so that no timer interrupt lands in one batch and not the
// other (under nested KVM one costs milliseconds); the release path's own irq_save and
// irq_restore still run for every event.
uint64_t time_batch(Spinlock* l, int batch, uint8_t mode) {
    const uint64_t f = irq_save();
    const uint64_t t0 = arch::rdtsc_lfence();
    for (int i = 0; i < batch; i++) contended_pair(l, t0, mode);
    const uint64_t t = arch::rdtsc_lfence() - t0;
    irq_restore(f);
    return t;
}

void sort_signed(int64_t* v, int n) {
    for (int i = 1; i < n; i++) {
        int64_t x = v[i];
        int j = i - 1;
        for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
        v[j + 1] = x;
    }
}

int isqrt(int n) {
    int r = 0;
    while ((r + 1) * (r + 1) <= n) r++;
    return r;
}

// Hundredths of a cycle as "[-]W.HH" (no floating point in the kernel).
struct Signed2 {
    const char* sign;
    uint64_t whole, hundredths;
};
Signed2 signed2(int64_t x100) {
    const uint64_t a = uint64_t(x100 < 0 ? -x100 : x100);
    return {x100 < 0 ? "-" : "", a / 100, a % 100};
}

// A circular session of the spinlock group; exits the VM failed when it does not start.
void start_traceevent_session() {
    spinlab::TraceSessionInformation s = spinlab::locktrace::default_session_params();
    s.command = uint32_t(spinlab::TraceCommand::kStart);
    s.enable_flags = spinlab::kTraceGroupSpinlock;
    // Circular: the buffers go round with no host draining them, every event written in full.
    s.logger_mode = uint32_t(spinlab::TraceLoggerMode::kCircular);
    s.flush_timer_ms = 0;
    // A small area (4 buffers of 16 KiB, about 630 events) that the warm-up goes round at least
    // twice, so that every page of it has been written before the timing: the steady state of a
    // session, whose buffers go round (the first write to a page is a one-off).
    s.buffer_size = 16384;
    s.minimum_buffers = 4;
    s.maximum_buffers = 4;
    if (locktrace_control(s) != spinlab::Status::kSuccess) {
        kprintf("bench: traceevent: the trace session did not start\n");
        qemu_exit(kExitFail);
    }
}

// Warm up (TCG translates the paths on first use), then choose a batch of about 1 ms (at
// least 4 pairs, at most 2,000): under nested KVM a pair costs hundreds of microseconds,
// under TCG about a microsecond.
int traceevent_batch(Spinlock* l) {
    namespace lt = spinlab::locktrace;
    const uint64_t warm_end = arch::rdtsc_lfence() + g_tsc_hz * kWarmupSeconds;
    const uint64_t warm_cap = arch::rdtsc_lfence() + g_tsc_hz * 30;
    const uint64_t area_events = 4 * 16384 / sizeof(spinlab::TraceSpinlockEvent);
    const uint64_t written0 = lt::area_totals(locktrace_area()).events_written;
    while ((arch::rdtsc_lfence() < warm_end ||
            lt::area_totals(locktrace_area()).events_written - written0 < 2 * area_events) &&
           arch::rdtsc_lfence() < warm_cap) {
        time_batch(l, 4, 1);
        time_batch(l, 4, 0);
        time_batch(l, 4, 2);
    }
    const uint64_t probe = time_batch(l, 16, 1) / 16 + 1;
    const uint64_t want = g_tsc_hz / 1000 / probe;
    return int(want < 4 ? 4 : want > 2000 ? 2000 : want);
}

// Per sample, the three batches' cycles (with an event, without, and with only the release
// path's irq_save and irq_restore) and the per-event differences, in hundredths of a cycle.
struct TraceEventSamples {
    int64_t diff[kEventSamples], irq_diff[kEventSamples];
    uint64_t on[kEventSamples], off[kEventSamples];
    int n;
};

void sample_traceevent(Spinlock* l, int batch, TraceEventSamples& s) {
    const uint64_t end = arch::rdtsc_lfence() + g_tsc_hz * kSampleSeconds * 2;
    int& n = s.n;
    for (n = 0; n < kEventSamples && (n < kMinSamples || arch::rdtsc_lfence() < end); n++) {
        uint64_t irq = 0;
        switch (n % 3) {  // the three batches in a rotated order
            case 0:
                s.on[n] = time_batch(l, batch, 1);
                s.off[n] = time_batch(l, batch, 0);
                irq = time_batch(l, batch, 2);
                break;
            case 1:
                s.off[n] = time_batch(l, batch, 0);
                irq = time_batch(l, batch, 2);
                s.on[n] = time_batch(l, batch, 1);
                break;
            default:
                irq = time_batch(l, batch, 2);
                s.on[n] = time_batch(l, batch, 1);
                s.off[n] = time_batch(l, batch, 0);
        }
        s.diff[n] = (int64_t(s.on[n]) - int64_t(s.off[n])) * 100 / batch;  // hundredths of a cycle per event
        s.irq_diff[n] = (int64_t(irq) - int64_t(s.off[n])) * 100 / batch;
    }
}

// The BENCH line: the medians and the 95 % intervals around them (sorts the samples).
void print_traceevent(TraceEventSamples& s, int batch, const spinlab::TraceLossCounters& before,
                      const spinlab::TraceLossCounters& after) {
    const int n = s.n;
    sort_signed(s.diff, n);
    sort_signed(s.irq_diff, n);
    sort(s.on, n);
    sort(s.off, n);
    // A 95 % interval of the median, distribution-free: the order statistics n/2 -+ 1.96 sqrt(n)/2.
    const int half = (196 * isqrt(n * 10000) / 100 + 199) / 200;  // ceil(0.98 sqrt(n))
    const int lo_i = n / 2 - half < 0 ? 0 : n / 2 - half;
    const int hi_i = n / 2 + half >= n ? n - 1 : n / 2 + half;
    const Signed2 med = signed2(s.diff[n / 2]), lo = signed2(s.diff[lo_i]), hi = signed2(s.diff[hi_i]);
    const Fixed2 pon = per_pair_of(s.on[n / 2], batch), poff = per_pair_of(s.off[n / 2], batch);
    const Signed2 irq_med = signed2(s.irq_diff[n / 2]), irq_lo = signed2(s.irq_diff[lo_i]),
                  irq_hi = signed2(s.irq_diff[hi_i]);
    kprintf("BENCH {\"bench\":\"traceevent\",\"algorithm\":\"%s\",\"clock\":\"%s\",\"cpus\":%u,"
            "\"hypervisor\":\"%s\",\"tsc_hz\":%lu,\"batch\":%d,\"samples\":%d,"
            "\"median_cycles_per_event\":%s%lu.%02lu,\"ci95_low\":%s%lu.%02lu,\"ci95_high\":%s%lu.%02lu,"
            "\"median_cycles_per_pair_with_event\":%lu.%02lu,\"median_cycles_per_pair_without\":%lu.%02lu,"
            "\"median_cycles_irq_save_restore\":%s%lu.%02lu,\"irq_ci95_low\":%s%lu.%02lu,\"irq_ci95_high\":%s%lu.%02lu,"
            "\"events_expected\":%lu,\"events_written\":%lu,\"events_lost\":%lu}\n",
            spinlab::lock_algorithm_name(g_lockcfg.algorithm), spinlab::clock_source_name(g_lockcfg.clock),
            g_ncpus, g_kvm.signature, g_tsc_hz, batch, n, med.sign, med.whole, med.hundredths, lo.sign,
            lo.whole, lo.hundredths, hi.sign, hi.whole, hi.hundredths, pon.whole, pon.hundredths,
            poff.whole, poff.hundredths, irq_med.sign, irq_med.whole, irq_med.hundredths, irq_lo.sign,
            irq_lo.whole, irq_lo.hundredths, irq_hi.sign, irq_hi.whole, irq_hi.hundredths, uint64_t(n) * batch, after.events_written - before.events_written,
            after.events_lost - before.events_lost);
}

[[noreturn]] void bench_traceevent() {
    namespace lt = spinlab::locktrace;
    start_traceevent_session();
    Spinlock l;
    spin_init(&l, "bench");
    const int batch = traceevent_batch(&l);
    static TraceEventSamples samples;
    const spinlab::TraceLossCounters before = lt::area_totals(locktrace_area());
    sample_traceevent(&l, batch, samples);
    const spinlab::TraceLossCounters after = lt::area_totals(locktrace_area());
    print_traceevent(samples, batch, before, after);
    // Every armed release wrote its event (other kernel locks may add a few sampled ones).
    const int n = samples.n;
    const bool ok = after.events_written - before.events_written >= uint64_t(n) * batch &&
                    after.events_lost == before.events_lost;
    if (!ok) kprintf("bench: traceevent: fewer events written than armed releases\n");
    qemu_exit(ok ? kExitPass : kExitFail);
}
#endif

// bench=memwrite: where the guest kernel's writes of trace events go slow. Cycles per
// 104-byte copy (a spinlock event's size), interrupts off, between kernel heap pages
// (pages_alloc) and the trace area's buffers (the region's trace section, or the private
// pages without a region), each way; and per 8-byte store into each. Every target is written
// once before the timing (first touches are dear under nested KVM). Medians of 101 samples of
// 256 copies over a 64 KiB window.
uint64_t time_copies(uint8_t* dst, const uint8_t* src, int n) {
    const uint64_t f = irq_save();
    const uint64_t t0 = arch::rdtsc_lfence();
    for (int i = 0; i < n; i++)
        __builtin_memcpy(dst + (uint64_t(i) * 104) % 65000, src + (uint64_t(i) * 104) % 65000, 104);
    asm volatile("" ::: "memory");
    const uint64_t t = arch::rdtsc_lfence() - t0;
    irq_restore(f);
    return t;
}

uint64_t time_stores(uint64_t* dst, int n) {
    const uint64_t f = irq_save();
    const uint64_t t0 = arch::rdtsc_lfence();
    for (int i = 0; i < n; i++) __atomic_store_n(&dst[(i * 13) & 8191], uint64_t(i), __ATOMIC_RELAXED);
    const uint64_t t = arch::rdtsc_lfence() - t0;
    irq_restore(f);
    return t;
}

[[noreturn]] void bench_memwrite() {
    constexpr int kCopies = 256, kN = 101;
    uint8_t* heap = reinterpret_cast<uint8_t*>(pages_alloc(16));
    uint8_t* heap2 = reinterpret_cast<uint8_t*>(pages_alloc(16));
    uint8_t* area = const_cast<uint8_t*>(static_cast<const uint8_t*>(locktrace_area()));
    if (!heap || !heap2 || !area || locktrace_area_size() < (1u << 20)) {
        kprintf("bench: memwrite: no memory or no trace area\n");
        qemu_exit(kExitFail);
    }
    uint8_t* buf = area + (locktrace_area_size() / 2 & ~uint64_t(4095));  // inside the buffers
    struct Case {
        const char* name;
        uint8_t* dst;
        const uint8_t* src;
    } cases[] = {{"heap_from_heap", heap, heap2}, {"area_from_heap", buf, heap2}, {"heap_from_area", heap, buf}};
    for (const Case& c : cases) __builtin_memset(c.dst, 1, 65536);
    static uint64_t v[kN];
    kprintf("BENCH {\"bench\":\"memwrite\",\"hypervisor\":\"%s\",\"tsc_hz\":%lu,\"area_kib\":%lu", g_kvm.signature,
            g_tsc_hz, locktrace_area_size() >> 10);
    for (const Case& c : cases) {
        for (int k = 0; k < kN; k++) v[k] = time_copies(c.dst, c.src, kCopies);
        sort(v, kN);
        const Fixed2 m = per_pair_of(v[kN / 2], kCopies);
        kprintf(",\"%s_cycles_per_104_bytes\":%lu.%02lu", c.name, m.whole, m.hundredths);
    }
    for (int which = 0; which < 2; which++) {
        uint64_t* d = reinterpret_cast<uint64_t*>(which ? buf : heap);
        for (int k = 0; k < kN; k++) v[k] = time_stores(d, kCopies);
        sort(v, kN);
        const Fixed2 m = per_pair_of(v[kN / 2], kCopies);
        kprintf(",\"%s_cycles_per_store\":%lu.%02lu", which ? "area" : "heap", m.whole, m.hundredths);
    }
    kprintf("}\n");
    qemu_exit(kExitPass);
}

}  // namespace

void bench_run(const char* which) {
    if (which[0] == 'm') bench_memwrite();
    if (which[0] == 's') bench_spinlock();
#if SPINLAB_INSTRUMENT == 1
    if (which[0] == 't') bench_traceevent();
#endif
    kprintf("bench: unknown benchmark '%s' (traceevent needs INSTRUMENT=1)\n", which);
    qemu_exit(kExitFail);
}
