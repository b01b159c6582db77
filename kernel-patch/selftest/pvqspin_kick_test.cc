// selftest/pvqspin_kick_test.cc: lock=pvqspin's kick wakes a waiter halted with interrupts off.
//
// The waiter (CPU 1) disables interrupts and takes a lock the holder (CPU 0) keeps: pvqspin's
// slow path (spinlock/pv_qspinlock.h, run here with a 64-spin bound whatever lock= says) makes
// it the queue head, it spins the bound, enters the hash, marks the byte slow and halts through
// the kernel's halt (spin_pv_wait: hlt with interrupts off). Only an NMI, or KVM's
// KVM_HC_KICK_CPU, ends such a hlt; the timer's interrupts cannot. The holder waits until the
// waiter is in its halt, then 5 more timer periods (it must still be there: nothing else woke
// it, and it halted once), then releases: the release finds the byte slow and kicks the
// waiter's CPU with the kernel's kick (spin_pv_kick: KVM_HC_KICK_CPU under KVM with PV unhalt,
// else an NMI). The waiter must then take the lock within 2 s (the kick's latency is printed),
// having halted exactly once with interrupts off throughout.
//
// The waiter's CPU logs the halt (perfdata.h HaltLog, written by kern/spinlock.cc's pv_wait):
// exactly one span, inside the waiter's own TSC readings around spin_pv_wait and as long as the
// holder kept it halted; nothing at INSTRUMENT=0.
//
// Fails if the kick is missing, or is an ordinary interrupt (a fixed-vector IPI stays pending
// while the waiter's interrupts are off): the holder gives up after 2 s, records the failure,
// and frees the waiter with NMIs of its own so that the suite goes on.
#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/kvm.h"
#include "../kern/lapic.h"
#include "../kern/lockstat.h"
#include "../kern/prcb.h"
#include "../kern/selftest.h"
#include "../kern/spinlock.h"
#include "../lockstat/halt_log.h"
#include "../spinlock/pv_qspinlock.h"

namespace {

namespace sl = spinlab::spinlock;

// The Env of pv_qspinlock.h for this test: the kernel's halt and kick, and what they saw.
struct KickTestEnv {
    uint32_t cpu_id;
    uint32_t cpu() const { return cpu_id; }
    void relax() const { arch::pause(); }
    void spin_check(const sl::Lock&, uint64_t) const {}
    bool vcpu_is_off(uint32_t) const { return false; }
    void yield_to(uint32_t) const {}
    uint32_t pvqspin_spin_bound() const { return 64; }
    bool pv_wait(const uint8_t* p, uint8_t v);
    void pv_kick(uint32_t cpu);
    void pv_count(sl::PvEvent e) { __atomic_fetch_add(&events[int(e)], 1, __ATOMIC_RELAXED); }
    uint64_t events[4] = {};
};

sl::Lock lock;
sl::McsNode holder_node, waiter_node;
KickTestEnv holder_env{0}, waiter_env{1};
volatile uint32_t in_wait;       // the waiter is inside spin_pv_wait
volatile uint32_t waits;         // spin_pv_wait calls
volatile uint32_t halted;        // of those, the ones that halted
volatile uint32_t irqs_on_seen;  // calls made with interrupts on (must stay 0)
volatile uint32_t kicks;         // spin_pv_kick calls
volatile uint32_t holding;       // the holder has the lock
volatile uint32_t got;           // the waiter took the lock
volatile uint64_t got_tsc;
// The waiter CPU's halt log around its spin_pv_wait: `written` before and after, its TSC just
// before the call and just after, and halted_since after.
volatile uint64_t log_written_before, log_written_after, wait_enter_tsc, wait_return_tsc, log_since_after;

bool KickTestEnv::pv_wait(const uint8_t* p, uint8_t v) {
    if (arch::irqs_enabled()) __atomic_fetch_add(&irqs_on_seen, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&waits, 1, __ATOMIC_RELAXED);
    const spinlab::HaltLog& log = lockstat_this_cpu()->halts;  // interrupts are off: our CPU's
    log_written_before = __atomic_load_n(&log.written, __ATOMIC_RELAXED);
    wait_enter_tsc = arch::rdtsc_lfence();
    __atomic_store_n(&in_wait, 1u, __ATOMIC_SEQ_CST);
    const bool h = spin_pv_wait(p, v);
    __atomic_store_n(&in_wait, 0u, __ATOMIC_SEQ_CST);
    wait_return_tsc = arch::rdtsc_lfence();
    log_written_after = __atomic_load_n(&log.written, __ATOMIC_RELAXED);
    log_since_after = __atomic_load_n(&log.halted_since, __ATOMIC_RELAXED);
    if (h) __atomic_fetch_add(&halted, 1, __ATOMIC_RELAXED);
    return h;
}

void KickTestEnv::pv_kick(uint32_t cpu) {
    __atomic_fetch_add(&kicks, 1, __ATOMIC_RELAXED);
    spin_pv_kick(cpu);
}

uint64_t ms_cycles(uint64_t ms) { return g_tsc_hz / 1000 * ms; }

// The holder keeps the waiter halted this long after it saw it in spin_pv_wait: five timer periods.
uint64_t held_halted_ms() { return 5 * 1000 / (g_timer_hz ? g_timer_hz : 100) + 1; }

// The kick spin_pv_kick sends (kern/spinlock.cc's pv_kick).
const char* kick_name() { return g_kvm.pv_unhalt && !g_lockcfg.pvqspin_nmi_kick ? "KVM_HC_KICK_CPU" : "NMI"; }

void holder_side() {
    if (!sl::pvq_try_acquire(lock, &holder_node)) {
        selftest_fail(__FILE__, __LINE__, "the holder could not take the free lock");
        return;
    }
    __atomic_store_n(&holding, 1u, __ATOMIC_SEQ_CST);
    // The waiter in its halt: the byte slow, and inside spin_pv_wait (10 s for a slow host).
    const uint64_t t0 = arch::rdtsc_lfence();
    while (!(__atomic_load_n(&lock.word.pvq_locked, __ATOMIC_ACQUIRE) == sl::kPvqSlow && in_wait)) {
        if (arch::rdtsc_lfence() - t0 > ms_cycles(10000)) {
            selftest_fail(__FILE__, __LINE__, "the waiter never halted (byte %u, %u waits)",
                          unsigned(lock.word.pvq_locked), unsigned(waits));
            break;
        }
        arch::pause();
    }
    // Five timer periods: its timer interrupts are pending, and must not end the halt.
    const uint64_t periods_ms = held_halted_ms();
    kprintf("pvqspin: cpu 1 halted with interrupts off; the release kicks it (%s) in %lu ms\n", kick_name(),
            periods_ms);
    delay_us(periods_ms * 1000);
    TEST_CHECK(in_wait);
    TEST_CHECK_EQ(waits, 1);
    TEST_CHECK(!got);
    const uint64_t kick_tsc = arch::rdtsc_lfence();
    sl::pvq_release(lock, holder_env);  // finds kPvqSlow: takes the waiter out of the hash, kicks
    TEST_CHECK_EQ(kicks, 1);
    bool woke = true;
    while (!__atomic_load_n(&got, __ATOMIC_ACQUIRE)) {
        if (arch::rdtsc_lfence() - kick_tsc > ms_cycles(2000)) {
            woke = false;
            break;
        }
        arch::pause();
    }
    if (woke) {
        kprintf("pvqspin: the kicked waiter (cpu 1, interrupts off, halted %u time) took the lock %lu us "
                "after the release (%s kick)\n",
                unsigned(halted), (got_tsc - kick_tsc) / (g_tsc_hz / 1000000 ? g_tsc_hz / 1000000 : 1),
                kick_name());
        return;
    }
    selftest_fail(__FILE__, __LINE__,
                  "the waiter, halted with interrupts off, was not woken by the %s kick within 2 s", kick_name());
    kprintf("pvqspin: the waiter was not woken by the %s kick within 2 s; sending it NMIs\n", kick_name());
    // Free it so that the suite goes on: an NMI ends its hlt, and the lock is free now. If
    // nothing wakes it, stop here with a panic rather than hang the run.
    const uint32_t apic = g_prcbs[1].apic_id;
    const uint64_t rescue = arch::rdtsc_lfence();
    while (!__atomic_load_n(&got, __ATOMIC_ACQUIRE)) {
        if (arch::rdtsc_lfence() - rescue > ms_cycles(5000))
            panic("pvqspin kick test: cpu 1, halted with interrupts off, woke neither for the %s kick nor "
                  "for 5 s of NMIs", kick_name());
        lapic_send_nmi(apic);
        delay_us(10000);
    }
}

void waiter_side() {
    while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE)) arch::pause();
    const uint64_t f = irq_save();  // interrupts off from here until the lock is ours and gone
    sl::pvq_acquire_contended(lock, &waiter_node, waiter_env);
    __atomic_store_n(&got_tsc, arch::rdtsc_lfence(), __ATOMIC_RELAXED);
    __atomic_store_n(&got, 1u, __ATOMIC_RELEASE);
    const bool irqs_stayed_off = !arch::irqs_enabled();
    sl::pvq_release(lock, waiter_env);
    irq_restore(f);
    TEST_CHECK(irqs_stayed_off);
}

void pair(int i, void*) {
    if (i == 0) holder_side();
    else waiter_side();
}

}  // namespace

void pvqspin_kick_wakes_a_waiter_halted_with_interrupts_off() {
    if (g_ncpus < 2) {
        kprintf("pvqspin: the kick test needs 2 CPUs: skipped\n");
        return;
    }
    sl::lock_init(lock, "pvq-kick", 0);
    in_wait = 0;
    waits = 0;
    halted = 0;
    irqs_on_seen = 0;
    kicks = 0;
    holding = 0;
    got = 0;
    log_written_before = 0;
    log_written_after = 0;
    wait_enter_tsc = 0;
    wait_return_tsc = 0;
    log_since_after = 0;
    waiter_env = KickTestEnv{1};
    holder_env = KickTestEnv{0};
    run_on_cpus(2, pair, nullptr);
    TEST_CHECK(got);
    TEST_CHECK_EQ(irqs_on_seen, 0);
    TEST_CHECK_EQ(waits, 1);   // one halt, ended by the kick: no spurious wake-up, none lost
    TEST_CHECK_EQ(halted, 1);
    TEST_CHECK_EQ(waiter_env.events[int(sl::PvEvent::kHalt)], 1);
    TEST_CHECK_EQ(waiter_env.events[int(sl::PvEvent::kSpuriousWakeup)], 0);
    TEST_CHECK_EQ(holder_env.events[int(sl::PvEvent::kKick)], 1);
    TEST_CHECK(!sl::pvq_is_locked(lock));
    TEST_CHECK(lock.mcs_tail == nullptr);
    // The waiter CPU's halt log: the one halt as one span. Interrupts were off throughout, so
    // no idle halt of that CPU falls between the two readings of `written`.
    TEST_CHECK_EQ(log_since_after, 0);
    if constexpr (spinlab::lockstat::kBuildLevel == spinlab::InstrumentLevel::kOff) {
        TEST_CHECK_EQ(log_written_after, log_written_before);
        return;
    }
    TEST_CHECK_EQ(log_written_after, log_written_before + 1);
    if (log_written_after != log_written_before + 1 || !halted) return;
    spinlab::HaltSpan s{};
    const auto c = spinlab::lockstat::halt_log_read(g_lockstat_cpus[1]->halts, log_written_before, &s, 1);
    TEST_CHECK(c.count == 1 && c.lost == 0);  // cpu 1's idle halts since have not overwritten it
    const uint64_t enter = s.enter_tsc, exit = s.exit_tsc;
    TEST_CHECK(wait_enter_tsc <= enter);
    TEST_CHECK(enter <= exit);
    TEST_CHECK(exit <= wait_return_tsc);
    // The holder kept it halted held_halted_ms() after it saw in_wait; half of that leaves room
    // for a host slow to run the waiter from its in_wait store to its hlt.
    if (exit < enter) return;
    const uint64_t us = (exit - enter) / (g_tsc_hz / 1000000 ? g_tsc_hz / 1000000 : 1);
    kprintf("pvqspin: cpu 1's halt log: one span of %lu us for the halt (held %lu ms)\n", us, held_halted_ms());
    if (exit - enter < ms_cycles(held_halted_ms()) / 2)
        selftest_fail(__FILE__, __LINE__, "the waiter's halt span is %lu us, under half of the %lu ms it was held",
                      us, held_halted_ms());
}
