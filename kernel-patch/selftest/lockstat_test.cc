// selftest/lockstat_test.cc: the instrumented spinlock in the running kernel.
// The algorithm is fixed per boot (lock=), so this suite tests the booted one; the harness
// boots once per algorithm (scripts/test-all.sh). It also goes through the two sysinfo entry
// points the system call and the host channel will use, with a kernel memory buffer.
#include <spinlab/perfdata.h>
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>

#include "../arch/x86.h"
#include "../kern/bootopts.h"
#include "../kern/console.h"
#include "../kern/kvm.h"
#include "../kern/lapic.h"
#include "../kern/lockclass.h"
#include "../kern/lockstat.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/spinlock.h"
#include "../kern/sysinfo_glue.h"
#include "../lockstat/log2_table.h"
#include "../lockstat/perf_record.h"
#include "../locktrace/trace_session.h"
#include "../sysinfo/memory_buffer.h"

namespace {

using spinlab::InfoClass;
using spinlab::Status;
namespace si = spinlab::sysinfo;
constexpr auto kLevel = spinlab::lockstat::kBuildLevel;
constexpr uint32_t kClass = kLockClassLockstatTest;

// Only this suite takes locks of class lockstat_test, so the class's counters are ours.
Spinlock lock_a = SPINLOCK_INIT("lockstat_test");
Spinlock lock_b = SPINLOCK_INIT("lockstat_test");
volatile uint64_t counter_a;  // lock_a must be held; updated non-atomically on purpose
volatile uint64_t counter_b;  // lock_b must be held
volatile uint32_t inside_a;   // threads inside lock_a's critical section: never above 1
constexpr int kIters = 5000;
// Fair locks (ticket, mcs) under TCG with more vCPUs than host cores wait a host time slice
// per handover (lock-waiter preemption): threads stop at kIters or at the deadline and count
// their own acquisitions, which the counters must then match exactly.
// Every thread makes at least kMinIters, even if it started after the deadline (spawning 16
// threads through a convoyed sched_lock can itself take seconds).
uint64_t deadline;
uint64_t total;  // acquisitions made by the threads (atomic adds)
constexpr int kMinIters = 16;

void start_clock(uint64_t seconds) {
    total = 0;
    deadline = arch::rdtsc_lfence() + g_tsc_hz * seconds;
}

// --- the sysinfo entry points over kernel memory -----------------------------------------------

Status query(InfoClass c, void* data, uint32_t len, uint32_t* ret = nullptr) {
    si::MemoryBufferState st{static_cast<uint8_t*>(data), len};
    uint32_t r = 0xdeadbeef;
    Status s = Status(sysinfo_query(uint32_t(c), si::memory_buffer(st), &r));
    if (ret) *ret = r;
    return s;
}

Status set(InfoClass c, void* data, uint32_t len, bool privileged, uint32_t* ret = nullptr) {
    si::MemoryBufferState st{static_cast<uint8_t*>(data), len};
    uint32_t r = 0xdeadbeef;
    Status s = Status(sysinfo_set(uint32_t(c), si::memory_buffer(st), privileged, &r));
    if (ret) *ret = r;
    return s;
}

void reset_class(uint32_t cls) {
    spinlab::ResetRequest r{spinlab::kAllCpus, cls};
    TEST_CHECK_STATUS(set(InfoClass::kSpinlabResetCounters, &r, sizeof r, true), Status::kSuccess);
}

// One class summed over CPUs (cpu = kAllCpus) or one CPU's, through the query.
struct PerfAnswer {
    spinlab::SpinlockPerfReply head;
    spinlab::SpinlockPerfRecord rec;
};
bool query_class(uint32_t cpu, uint32_t cls, spinlab::LockClassPerf* out) {
    static PerfAnswer a;  // 1.3 KB; tests run one at a time
    __builtin_memset(&a, 0, sizeof a);
    a.head.cpu = cpu;
    a.head.lock_class = cls;
    a.head.flags = cpu == spinlab::kAllCpus ? spinlab::kPerfMergeCpus : 0;
    uint32_t ret;
    Status s = query(InfoClass::kSpinlabSpinlockPerfData, &a, sizeof a, &ret);
    TEST_CHECK_STATUS(s, Status::kSuccess);
    TEST_CHECK_EQ(ret, sizeof a);
    TEST_CHECK_EQ(a.head.record_count, 1);
    *out = a.rec.perf;
    return s == Status::kSuccess;
}

spinlab::EventTraceSpinlockInformation params_now() {
    spinlab::EventTraceSpinlockInformation p{};
    p.event_trace_information_class = 5;
    TEST_CHECK_STATUS(query(InfoClass::kSystemPerformanceTraceInformation, &p, sizeof p),
                 Status::kSuccess);
    return p;
}

bool same_params(const spinlab::EventTraceSpinlockInformation& a,
                 const spinlab::EventTraceSpinlockInformation& b) {
    return a.spin_threshold == b.spin_threshold && a.acquire_sample_rate == b.acquire_sample_rate &&
           a.contention_sample_rate == b.contention_sample_rate &&
           a.hold_threshold == b.hold_threshold;
}

spinlab::EventTraceSpinlockInformation default_params() {
    return {5, spinlab::kMinSpinThreshold, spinlab::kMinAcquireSampleRate,
            spinlab::kMinContentionSampleRate, spinlab::kMinHoldThreshold};
}

// The per-class invariants of perfdata.h on a quiescent snapshot.
void check_invariants(const spinlab::LockClassPerf& p, const char* what) {
    using spinlab::lockstat::hold_hist_total;
    using spinlab::lockstat::wait_hist_total;
    if (p.uncontended + wait_hist_total(p) + p.wait_overflow != p.acquisitions)
        selftest_fail(__FILE__, __LINE__,
                      "%s: uncontended %lu + waits %lu + overflow %lu != acquisitions %lu", what,
                      p.uncontended, wait_hist_total(p), p.wait_overflow, p.acquisitions);
    uint64_t lhp = 0;
    for (uint64_t c : p.lhp_count) lhp += c;
    TEST_CHECK_EQ(lhp, p.acquisitions - p.uncontended);
    TEST_CHECK_EQ(hold_hist_total(p) + p.hold_overflow, p.holds_timed);
    if (!g_kvm.steal_time)  // no steal time (TCG): every contended wait is `unknown`
        TEST_CHECK_EQ(p.lhp_count[uint32_t(spinlab::LhpClass::kUnknown)], lhp);
    if (kLevel == spinlab::InstrumentLevel::kFull)  // every contended hold is timed
        TEST_CHECK(p.holds_timed >= p.acquisitions - p.uncontended);
    if (kLevel == spinlab::InstrumentLevel::kCounters) TEST_CHECK_EQ(p.holds_timed, 0);
}

// --- mutual exclusion and the invariant ----------------------------------------------------------

void hammer(int i, void*) {
    const bool irq = i & 1;  // half the threads use the irqsave variant
    int k = 0;
    for (; k < kIters && (k < kMinIters || arch::rdtsc_lfence() < deadline); k++) {
        uint64_t f = 0;
        if (irq) f = spin_lock_irqsave(&lock_a);
        else spin_lock(&lock_a);
        if (__atomic_add_fetch(&inside_a, 1, __ATOMIC_RELAXED) != 1)
            selftest_fail(__FILE__, __LINE__, "two CPUs inside the critical section");
        uint64_t v = counter_a;  // read, spin a little, write: a lost update shows
        for (int j = 0; j < 8; j++) arch::pause();
        counter_a = v + 1;
        __atomic_sub_fetch(&inside_a, 1, __ATOMIC_RELAXED);
        if (irq) spin_unlock_irqrestore(&lock_a, f);
        else spin_unlock(&lock_a);
    }
    __atomic_fetch_add(&total, uint64_t(k), __ATOMIC_RELAXED);
}

void mutual_exclusion_and_invariant() {
    reset_class(kClass);
    counter_a = 0;
    start_clock(3);
    const int n = int(g_ncpus) * 2;
    run_on_cpus(n, hammer, nullptr);
    const uint64_t want = total;
    TEST_CHECK(want > 0);
    TEST_CHECK_EQ(counter_a, want);
    TEST_CHECK(!spin_is_locked(&lock_a));
    TEST_CHECK_EQ(spin_holder_cpu(&lock_a), kNoCpu);
    spinlab::LockClassPerf all;
    if (!query_class(spinlab::kAllCpus, kClass, &all)) return;
    if (kLevel == spinlab::InstrumentLevel::kOff) {  // the baseline kernel records nothing
        TEST_CHECK_EQ(all.acquisitions, 0);
        return;
    }
    TEST_CHECK_EQ(all.acquisitions, want);  // exactly the test's own count
    check_invariants(all, "all CPUs");
    uint64_t sum = 0;
    for (uint32_t c = 0; c < g_ncpus; c++) {
        spinlab::LockClassPerf one;
        if (!query_class(c, kClass, &one)) return;
        check_invariants(one, "one CPU");
        sum += one.acquisitions;
    }
    TEST_CHECK_EQ(sum, want);
    kprintf("lockstat: lock=%s, %d threads, %lu acquisitions: %lu contended (max wait %lu "
            "cycles), %lu holds timed\n", spinlab::lock_algorithm_name(g_lockcfg.algorithm), n,
            want, all.acquisitions - all.uncontended, all.wait_cycles_max, all.holds_timed);
    kprintf("lockstat: LHP classes: neither %lu, holder-preempted %lu, waiter-preempted %lu, "
            "both %lu, unknown %lu; PV yield hypercalls so far %lu\n", all.lhp_count[0],
            all.lhp_count[1], all.lhp_count[2], all.lhp_count[3], all.lhp_count[4],
            kvm_yield_count());
}

// take A, take B, drop A, drop B: releases out of order (the MCS node pool must cope).
void nest(int i, void*) {
    int k = 0;
    for (; k < kIters / 2 && (k < kMinIters || arch::rdtsc_lfence() < deadline); k++) {
        uint64_t f = 0;
        const bool irq = (i + k) & 1;
        if (irq) f = spin_lock_irqsave(&lock_a);
        else spin_lock(&lock_a);
        spin_lock(&lock_b);
        counter_a = counter_a + 1;
        counter_b = counter_b + 1;
        if (irq) spin_unlock_irqrestore(&lock_a, f & ~arch::kFlagIF);  // B still holds irqs off
        else spin_unlock(&lock_a);
        spin_unlock(&lock_b);
        if (irq && (f & arch::kFlagIF)) arch::sti();
    }
    __atomic_fetch_add(&total, uint64_t(k), __ATOMIC_RELAXED);
}

void nested_out_of_order_release() {
    reset_class(kClass);
    counter_a = 0;
    counter_b = 0;
    start_clock(2);
    const int n = int(g_ncpus) * 2;
    run_on_cpus(n, nest, nullptr);
    const uint64_t want = total;
    TEST_CHECK(want > 0);
    TEST_CHECK_EQ(counter_a, want);
    TEST_CHECK_EQ(counter_b, want);
    TEST_CHECK(!spin_is_locked(&lock_a) && !spin_is_locked(&lock_b));
    spinlab::LockClassPerf all;
    if (!query_class(spinlab::kAllCpus, kClass, &all)) return;
    if (kLevel != spinlab::InstrumentLevel::kOff) {
        TEST_CHECK_EQ(all.acquisitions, 2 * want);
        check_invariants(all, "nested");
    }
}

// --- sysinfo -------------------------------------------------------------------------------------

// Boot options spin-threshold= & co. set the starting values (the defaults without them).
spinlab::EventTraceSpinlockInformation boot_params() {
    return {5, g_boot.spinlock.spin_threshold, g_boot.spinlock.acquire_sample_rate,
            g_boot.spinlock.contention_sample_rate, g_boot.spinlock.hold_threshold};
}

void params_round_trip() {
    const auto before = params_now();
    TEST_CHECK(same_params(before, boot_params()));
    spinlab::EventTraceSpinlockInformation p = {5, 7, 2000, 3, 5000000};
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &p, sizeof p, true),
                 Status::kSuccess);
    TEST_CHECK(same_params(params_now(), p));
    TEST_CHECK_EQ(g_spinlock_params.hold_threshold, 5000000);
    auto d = boot_params();
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &d, sizeof d, true),
                 Status::kSuccess);
    TEST_CHECK(same_params(params_now(), d));
}

void unprivileged_set_denied() {
    const auto before = params_now();
    spinlab::EventTraceSpinlockInformation p = {5, 7, 2000, 3, 5000000};
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &p, sizeof p, false),
                 Status::kAccessDenied);
    TEST_CHECK(same_params(params_now(), before));
    // A reset is a set too: denied, and the counters stay.
    spin_lock(&lock_a);
    spin_unlock(&lock_a);
    spinlab::LockClassPerf a, b;
    if (!query_class(spinlab::kAllCpus, kClass, &a)) return;
    spinlab::ResetRequest r{spinlab::kAllCpus, kClass};
    TEST_CHECK_STATUS(set(InfoClass::kSpinlabResetCounters, &r, sizeof r, false), Status::kAccessDenied);
    if (!query_class(spinlab::kAllCpus, kClass, &b)) return;
    TEST_CHECK_EQ(b.acquisitions, a.acquisitions);
    if (kLevel != spinlab::InstrumentLevel::kOff) TEST_CHECK(b.acquisitions > 0);
}

void below_minimum_refused() {
    const auto before = params_now();
    for (int field = 0; field < 4; field++) {
        spinlab::EventTraceSpinlockInformation p = default_params();
        // One field one below its minimum, the others valid (and different from now).
        p.hold_threshold = 2 * spinlab::kMinHoldThreshold;
        if (field == 0) p.spin_threshold = spinlab::kMinSpinThreshold - 1;
        if (field == 1) p.acquire_sample_rate = spinlab::kMinAcquireSampleRate - 1;
        if (field == 2) p.contention_sample_rate = spinlab::kMinContentionSampleRate - 1;
        if (field == 3) p.hold_threshold = spinlab::kMinHoldThreshold - 1;
        TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &p, sizeof p, true),
                     Status::kInvalidParameter);
        TEST_CHECK(same_params(params_now(), before));
    }
}

void short_buffers_get_needed_length() {
    uint8_t buf[64] = {};
    uint32_t ret;
    TEST_CHECK_STATUS(query(InfoClass::kSpinlabSystemConfiguration, buf, 64, &ret),
                 Status::kInfoLengthMismatch);
    TEST_CHECK_EQ(ret, sizeof(spinlab::SystemConfiguration));
    spinlab::EventTraceSpinlockInformation p = default_params();
    TEST_CHECK_STATUS(query(InfoClass::kSystemPerformanceTraceInformation, &p, 8, &ret),
                 Status::kInfoLengthMismatch);
    TEST_CHECK_EQ(ret, sizeof p);
    TEST_CHECK_STATUS(query(InfoClass::kSpinlabLockClassTable, buf, 8, &ret),
                 Status::kInfoLengthMismatch);
    TEST_CHECK_EQ(ret, sizeof(spinlab::LockClassTableReply) +
                           kLockClassCount * sizeof(spinlab::LockClassEntry));
    spinlab::SpinlockPerfRequest req{spinlab::kAllCpus, kClass, 0, 0, 0, {}};
    TEST_CHECK_STATUS(query(InfoClass::kSpinlabSpinlockPerfData, &req, sizeof req, &ret),
                 Status::kInfoLengthMismatch);
    TEST_CHECK_EQ(ret, sizeof req + g_ncpus * sizeof(spinlab::SpinlockPerfRecord));
    // And the set side: the parameters want exactly their struct.
    auto d = default_params();
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &d, sizeof d - 4, true, &ret),
                 Status::kInfoLengthMismatch);
    TEST_CHECK_EQ(ret, sizeof d);
    TEST_CHECK_STATUS(query(InfoClass(0x5399), buf, sizeof buf, &ret), Status::kInvalidInfoClass);
}

// The spinlock trace group is the full instrumentation's: a kernel built with less refuses a
// session that asks for it (kInvalidParameter, nothing started) instead of running one that
// writes no spinlock event. The full kernel starts it (and stops it again).
void spinlock_trace_group_needs_full_instrumentation() {
    if (kLevel == spinlab::InstrumentLevel::kOff) return;  // no trace sessions at all
    spinlab::TraceSessionInformation s = spinlab::locktrace::default_session_params();
    s.event_trace_information_class = spinlab::kSpinlabTraceSession;
    s.command = uint32_t(spinlab::TraceCommand::kStart);
    s.enable_flags = spinlab::kTraceGroupSpinlock;
    s.buffer_size = 16384;  // small, as the trace suite's: fits any guest's trace area
    s.minimum_buffers = 2;
    s.maximum_buffers = 4;
    uint32_t ret;
    const Status want = kLevel == spinlab::InstrumentLevel::kFull ? Status::kSuccess : Status::kInvalidParameter;
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &s, sizeof s, true, &ret), want);
    spinlab::TraceSessionInformation stop{};
    stop.event_trace_information_class = spinlab::kSpinlabTraceSession;
    stop.command = uint32_t(spinlab::TraceCommand::kStop);
    TEST_CHECK_STATUS(set(InfoClass::kSystemPerformanceTraceInformation, &stop, sizeof stop, true, &ret),
                      want == Status::kSuccess ? Status::kSuccess : Status::kInvalidParameter);  // none ran
}

void configuration_and_class_table() {
    spinlab::SystemConfiguration c{};
    uint32_t ret;
    TEST_CHECK_STATUS(query(InfoClass::kSpinlabSystemConfiguration, &c, sizeof c, &ret),
                 Status::kSuccess);
    TEST_CHECK_EQ(ret, sizeof c);
    TEST_CHECK_EQ(c.abi_version, spinlab::kSysinfoAbiVersion);
    TEST_CHECK_EQ(c.cpu_count, g_ncpus);
    TEST_CHECK_EQ(c.tsc_hz, g_tsc_hz);
    // These two only show that the answer copies the kernel's variables; that the variables
    // follow the command line (lock=, clock=) is checked from outside by vm-images/selftest.py,
    // against the line printed below.
    TEST_CHECK_EQ(c.lock_algorithm, uint32_t(g_lockcfg.algorithm));
    TEST_CHECK_EQ(c.clock_source, uint32_t(g_lockcfg.clock));
    TEST_CHECK_EQ(c.instrument_level, uint32_t(kLevel));
    TEST_CHECK_EQ(c.lock_class_count, kLockClassCount);
    TEST_CHECK_EQ(c.steal_time, g_kvm.steal_time);
    TEST_CHECK(c.build_id[0] != '\0');
    kprintf("lockstat: config: %u CPUs, TSC %lu Hz, lock %s, clock %s, instrument %s, "
            "hypervisor '%s', KVM features 0x%x, build %s\n", c.cpu_count, c.tsc_hz,
            spinlab::lock_algorithm_name(spinlab::LockAlgorithm(c.lock_algorithm)),
            spinlab::clock_source_name(spinlab::ClockSource(c.clock_source)),
            spinlab::instrument_level_name(spinlab::InstrumentLevel(c.instrument_level)),
            c.hypervisor_signature, c.kvm_features, c.build_id);

    struct {
        spinlab::LockClassTableReply head;
        spinlab::LockClassEntry e[spinlab::kMaxLockClasses];
    } t;
    const uint32_t before = g_lock_classes[kClass].lock_count;
    Spinlock l;
    spin_init(&l, "lockstat_test");  // counted; statically initialised locks are not
    TEST_CHECK_EQ(spin_class(&l), kClass);
    TEST_CHECK_STATUS(query(InfoClass::kSpinlabLockClassTable, &t, sizeof t, &ret), Status::kSuccess);
    TEST_CHECK_EQ(t.head.count, kLockClassCount);
    TEST_CHECK_EQ(t.e[kClass].lock_count, before + 1);
    auto named = [&](uint32_t id, const char* name) {
        return t.e[id].id == id && lock_class_name_eq(t.e[id].name, name);
    };
    TEST_CHECK(named(kLockClassOther, "other"));
    TEST_CHECK(named(kLockClassSched, "sched"));
    TEST_CHECK(named(kLockClassConsole, "console"));
    TEST_CHECK(named(kFirstUserLockClass, "user0"));
    TEST_CHECK(named(spinlab::kMaxLockClasses - 1, "user15"));
    TEST_CHECK_EQ(spin_class(&g_sched_lock), kLockClassSched);
}

void touch(int, void*) {
    for (int k = 0; k < 100; k++) {
        spin_lock(&lock_a);
        spin_unlock(&lock_a);
    }
}

void reset_reaches_every_cpu() {
    run_on_cpus(int(g_ncpus), touch, nullptr);  // some counts on every CPU
    uint64_t resets[kMaxCpus];
    for (uint32_t c = 0; c < g_ncpus; c++) resets[c] = g_lockstat_cpus[c]->resets;
    reset_class(kClass);  // an IPI to every other CPU, done locally on this one
    for (uint32_t c = 0; c < g_ncpus; c++) {
        TEST_CHECK_EQ(g_lockstat_cpus[c]->resets, resets[c] + 1);
        spinlab::LockClassPerf p;
        if (!query_class(c, kClass, &p)) return;
        TEST_CHECK_EQ(p.acquisitions, 0);
        TEST_CHECK_EQ(p.uncontended, 0);
    }
    // Other classes are untouched (the scheduler has certainly been counting).
    spinlab::LockClassPerf s;
    if (!query_class(spinlab::kAllCpus, kLockClassSched, &s)) return;
    if (kLevel != spinlab::InstrumentLevel::kOff) TEST_CHECK(s.acquisitions > 0);
}

// --- timing=all (lockstat/timing.h) ---------------------------------------------------------------

// Booted with timing=all, every acquisition of this CPU's uncontended loop is timed: none is
// `uncontended`, every one is in a wait bucket, and most sit in one bucket, the uncontended peak
// of the original experiment's table (printed here in its form). Booted without, the same loop
// is all `uncontended`, untimed. Either way every CPU's perf data says what was booted.
void timing_all_times_every_acquisition() {
    constexpr uint64_t kLoops = 2000;
    reset_class(kClass);
    for (uint64_t i = 0; i < kLoops; i++) {  // interrupts off: nothing runs between the stamps
        const uint64_t f = spin_lock_irqsave(&lock_b);
        spin_unlock_irqrestore(&lock_b, f);
    }
    for (uint32_t c = 0; c < g_ncpus; c++)
        TEST_CHECK_EQ(g_lockstat_cpus[c]->timing, g_lockcfg.time_all ? 1u : 0u);
    spinlab::LockClassPerf p;
    if (!query_class(spinlab::kAllCpus, kClass, &p)) return;
    if (kLevel == spinlab::InstrumentLevel::kOff) {
        TEST_CHECK_EQ(p.acquisitions, 0);
        return;
    }
    TEST_CHECK_EQ(p.acquisitions, kLoops);
    check_invariants(p, "timing");
    if (!g_lockcfg.time_all) {
        TEST_CHECK_EQ(p.uncontended, kLoops);
        TEST_CHECK_EQ(spinlab::lockstat::wait_hist_total(p), 0);
        return;
    }
    TEST_CHECK_EQ(p.uncontended, 0);
    TEST_CHECK_EQ(spinlab::lockstat::wait_hist_total(p) + p.wait_overflow, kLoops);
    if (kLevel == spinlab::InstrumentLevel::kFull) TEST_CHECK_EQ(p.holds_timed, kLoops);
    uint32_t peak = 0;
    for (uint32_t k = 1; k < spinlab::kHistBuckets; k++)
        if (p.wait_hist[k] > p.wait_hist[peak]) peak = k;
    static char table[4096];
    spinlab::lockstat::format_wrk_table(p.wait_hist, p.wait_overflow, table, sizeof table);
    kprintf("lockstat: timing=all, clock=%s, %lu uncontended acquisitions, peak 2^%u:\n%s",
            spinlab::clock_source_name(g_lockcfg.clock), kLoops, peak, table);
    // A peak: at least 3 in 4 in it and the bucket beside it (TCG, cpuid: 2^7 42 %, 2^8 58 %;
    // a vCPU the host took away between two stamps lands far above, and only that one), and a
    // short one: no wait, only the lock word and two stamps, far below 2^20 cycles (0.4 ms).
    const uint64_t beside = peak == 0 ? p.wait_hist[1]
                            : peak + 1 == spinlab::kHistBuckets
                                ? p.wait_hist[peak - 1]
                                : (p.wait_hist[peak - 1] > p.wait_hist[peak + 1] ? p.wait_hist[peak - 1]
                                                                                 : p.wait_hist[peak + 1]);
    TEST_CHECK((p.wait_hist[peak] + beside) * 4 >= kLoops * 3);
    TEST_CHECK(peak < 20);
}

// --- the lockup detector --------------------------------------------------------------------

volatile uint32_t lockup_held;
uint64_t lockup_reports_before;

void lockup_pair(int i, void*) {
    if (i == 0) {  // the holder, on CPU 0: hold lock_a until the waiter was reported (<= 10 s;
                   // a fixed hold would be flaky: the host may not run the waiter's vCPU)
        spin_lock(&lock_a);
        __atomic_store_n(&lockup_held, 1u, __ATOMIC_RELEASE);
        const uint64_t end = arch::rdtsc_lfence() + g_tsc_hz * 10;
        while (__atomic_load_n(&g_lockup_reports, __ATOMIC_RELAXED) == lockup_reports_before &&
               arch::rdtsc_lfence() < end)
            arch::pause();
        spin_unlock(&lock_a);
    } else {       // the waiter, on CPU 1: spin past the lowered bound, then get the lock
        while (!__atomic_load_n(&lockup_held, __ATOMIC_ACQUIRE)) arch::pause();
        spin_lock(&lock_a);
        spin_unlock(&lock_a);
    }
}

void lockup_detector_reports() {
    if (g_ncpus < 2) {
        kprintf("lockstat: lockup detector test needs 2 CPUs: skipped\n");
        return;
    }
    const uint64_t saved = g_lockcfg.lockup_cycles;
    const uint64_t reports = __atomic_load_n(&g_lockup_reports, __ATOMIC_RELAXED);
    lockup_reports_before = reports;
    lockup_held = 0;
    __atomic_store_n(&g_lockcfg.lockup_cycles, g_tsc_hz / 50, __ATOMIC_RELAXED);  // 20 ms
    run_on_cpus(2, lockup_pair, nullptr);
    __atomic_store_n(&g_lockcfg.lockup_cycles, saved, __ATOMIC_RELAXED);
    TEST_CHECK(__atomic_load_n(&g_lockup_reports, __ATOMIC_RELAXED) > reports);
    TEST_CHECK(!spin_is_locked(&lock_a));
}

const SelfTest kTests[] = {
    {"mutual_exclusion_and_invariant", mutual_exclusion_and_invariant},
    {"nested_out_of_order_release", nested_out_of_order_release},
    {"params_round_trip", params_round_trip},
    {"unprivileged_set_denied", unprivileged_set_denied},
    {"below_minimum_refused", below_minimum_refused},
    {"short_buffers_get_needed_length", short_buffers_get_needed_length},
    {"configuration_and_class_table", configuration_and_class_table},
    {"spinlock_trace_group_needs_full_instrumentation", spinlock_trace_group_needs_full_instrumentation},
    {"reset_reaches_every_cpu", reset_reaches_every_cpu},
    {"lockup_detector_reports", lockup_detector_reports},
    {"timing_all_times_every_acquisition", timing_all_times_every_acquisition},
};

}  // namespace

extern const SelfTestSuite kSuiteLockstat = {"lockstat", kTests, sizeof kTests / sizeof kTests[0]};
