// kern/spinlock.cc: see spinlock.h. The kernel's Env for spinlock/ and lockstat/ (the policy
// their templates call), the per-CPU MCS node pool and the lockup detector.
#include "spinlock.h"

#include "../lib/format.h"
#include "../lockstat/clock.h"
#include "../lockstat/instrumented_lock.h"
#include "console.h"
#include "kvm.h"
#include "lapic.h"
#include "lockstat.h"
#include "locktrace.h"
#include "sched.h"
#include "vcpu_off.h"

uint64_t g_lockup_reports;
bool g_lock_order_checks;
LockOrderReport* volatile g_lock_order_capture;

namespace {

namespace sl = spinlab::spinlock;
namespace ls = spinlab::lockstat;
using spinlab::LockAlgorithm;

// --- per-CPU MCS queue nodes -----------------------------------------------------------------
// A node is in use from acquisition to release, and releases need not be in the reverse order
// of acquisitions (take A, take B, drop A), so nodes are a per-CPU set, not a stack indexed by
// nesting depth. 16 is far beyond the kernel's deepest nesting (thread lock, an interrupt
// handler's lock, the console lock of a panic or a lockup report).
constexpr uint32_t kMcsNodesPerCpu = 16;
struct alignas(64) McsPool {
    sl::McsNode nodes[kMcsNodesPerCpu];
    uint32_t used;  // bit i: nodes[i] in use. Owning CPU only, any context (see alloc).
};
McsPool mcs_pools[kMaxCpus];

sl::McsNode* alloc_mcs_node(uint32_t cpu) {
    McsPool& p = mcs_pools[cpu];
    uint32_t used = __atomic_load_n(&p.used, __ATOMIC_RELAXED);
    for (;;) {
        const uint32_t free = ~used & ((1u << kMcsNodesPerCpu) - 1);
        if (!free) panic("spinlock: more than %u MCS locks held on cpu %u", kMcsNodesPerCpu, cpu);
        const uint32_t bit = free & -free;
        // cmpxchg without lock prefix: one instruction, so atomic against an interrupt handler
        // on this CPU (which allocates and frees before it returns); no other CPU writes it.
        bool ok;
        asm volatile("cmpxchgl %3, %1" : "+a"(used), "+m"(p.used), "=@ccz"(ok) : "r"(used | bit)
                     : "memory");
        if (ok) return &p.nodes[__builtin_ctz(bit)];
    }
}

void free_mcs_node(uint32_t cpu, sl::McsNode* n) {
    McsPool& p = mcs_pools[cpu];
    const uint32_t bit = 1u << uint32_t(n - p.nodes);
    asm volatile("andl %1, %0" : "+m"(p.used) : "r"(~bit) : "memory");  // one instruction
}

// --- the lockup detector ---------------------------------------------------------------------
// Called every 65,536 spins of one wait (start: that wait's first call, on the waiter's stack).
__attribute__((noinline, cold)) void lockup_check(const sl::Lock& l, uint64_t spins,
                                                  uint64_t& start) {
    const uint64_t bound = __atomic_load_n(&g_lockcfg.lockup_cycles, __ATOMIC_RELAXED);
    if (bound == 0) return;
    const uint64_t now = arch::rdtsc_lfence();
    if (spins == sl::kSpinCheckInterval || start == 0) {
        start = now;
        return;
    }
    if (now - start < bound) return;
    const uint64_t waited = now - start;
    start = now;  // report again after another bound
    __atomic_fetch_add(&g_lockup_reports, 1, __ATOMIC_RELAXED);
    char buf[200];
    const uint32_t holder = __atomic_load_n(&l.holder_cpu, __ATOMIC_RELAXED);
    int n = format(buf, sizeof buf,
                   "lockup: cpu %u spinning on lock '%s' (class %s) for %lu cycles (%lu spins);"
                   " holder cpu %d, acquired at %p\n",
                   cpu_number(), l.name, g_lock_classes[l.class_id].name, waited, spins,
                   holder == kNoCpu ? -1 : int(holder), l.holder_site);
    // Waiting on the console lock itself: write past it rather than deadlock on it.
    if (l.class_id == kLockClassConsole) console_write_unlocked(buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
    else console_write(buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
}

// --- lock order (lockclass.h) ----------------------------------------------------------------
// The locks each CPU holds, in no order (releases need not mirror acquisitions). Only the
// owning CPU touches its set. An interrupt handler may take and drop locks between any two of
// our instructions, but it leaves the set as it found it, so each update is ordered to be
// safe against that (a slot is claimed before it is filled; an empty slot reads as nullptr)
// rather than made with interrupts off. Locks taken before the checks were switched on are
// not in the set.
struct HeldLocks {
    const Spinlock* locks[kMcsNodesPerCpu];
    uint32_t count;
};
HeldLocks held_locks[kMaxCpus];

__attribute__((noinline, cold)) void lock_order_violation(const Spinlock* held, const Spinlock* l,
                                                         const void* site) {
    const uint32_t hc = spin_class(held), lc = spin_class(l);
    LockOrderReport r{spin_name(held), spin_holder_site(held), spin_name(l), site, {}};
    format(r.message, sizeof r.message,
           "lock order: cpu %u takes '%s' (class %s, rank %u) at %p while holding '%s' (class %s,"
           " rank %u) taken at %p",
           cpu_number(), spin_name(l), g_lock_classes[lc].name, lock_class_rank(lc), site,
           spin_name(held), g_lock_classes[hc].name, lock_class_rank(hc), spin_holder_site(held));
    if (LockOrderReport* c = g_lock_order_capture) {
        if (!c->taken) *c = r;
        return;
    }
    panic("%s", r.message);
}

// Before taking l: every lock this CPU holds must rank below it (or be unranked, or of l's class).
void check_order(const Spinlock* l, const void* site, uint32_t me) {
    const uint8_t rank = lock_class_rank(spin_class(l));
    if (!rank) return;
    const HeldLocks& h = held_locks[me];
    const uint32_t n = __atomic_load_n(&h.count, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < n && i < kMcsNodesPerCpu; i++) {
        const Spinlock* held = __atomic_load_n(&h.locks[i], __ATOMIC_RELAXED);
        if (held && lock_class_rank(spin_class(held)) > rank && spin_class(held) != spin_class(l)) {
            lock_order_violation(held, l, site);
            return;
        }
    }
}

void note_held(const Spinlock* l, uint32_t me) {
    HeldLocks& h = held_locks[me];
    const uint32_t i = __atomic_load_n(&h.count, __ATOMIC_RELAXED);
    if (i >= kMcsNodesPerCpu) return;
    __atomic_store_n(&h.locks[i], nullptr, __ATOMIC_RELAXED);
    __atomic_store_n(&h.count, i + 1, __ATOMIC_RELAXED);  // claim the slot, then fill it
    arch::barrier();
    __atomic_store_n(&h.locks[i], l, __ATOMIC_RELAXED);
}

void note_released(const Spinlock* l, uint32_t me) {
    HeldLocks& h = held_locks[me];
    const uint32_t n = __atomic_load_n(&h.count, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < n && i < kMcsNodesPerCpu; i++)
        if (__atomic_load_n(&h.locks[i], __ATOMIC_RELAXED) == l) {
            // Move the last entry here, then drop the last slot: a handler in between sees the
            // last lock twice, which changes no check.
            __atomic_store_n(&h.locks[i], __atomic_load_n(&h.locks[n - 1], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
            arch::barrier();
            __atomic_store_n(&h.count, n - 1, __ATOMIC_RELAXED);
            __atomic_store_n(&h.locks[n - 1], nullptr, __ATOMIC_RELAXED);
            return;
        }
}

constexpr spinlab::InstrumentLevel kLevel = ls::kBuildLevel;

// --- lock=pvqspin: the halt and the kick ------------------------------------------------------
// pv_wait(p, v) halts this vCPU while *p == v; pv_kick(cpu) wakes that CPU's vCPU. The waiter may
// hold a spin_lock_irqsave lock or wait in an interrupt handler, so the halt must end without an
// interrupt: the kick is KVM_HC_KICK_CPU when KVM offers PV unhalt (kvm.h: it wakes a hlt with
// interrupts off, and one that comes before the hlt is remembered), else an NMI IPI, which a
// CPU takes with interrupts off too.
//
// The NMI is not remembered: one that arrives after the waiter's check of *p and before its hlt
// would be taken, return to the hlt, and the waiter would sleep through its only kick. So the
// check and the hlt form a window (spin_pv_halt below, interrupts off from the check to the
// hlt), and the NMI handler (spin_pv_nmi, from trap.cc) moves an NMI that interrupted the window
// past the hlt: the waiter then returns as if woken. Since every kick is sent after the kicker
// changed *p (pv_qspinlock.h), a kick before the window is seen by the check, a kick inside it
// skips the hlt, and a kick during the hlt wakes it. An ordinary interrupt cannot enter the
// window: interrupts are off there, and when the waiter's own context had them on, the hlt is
// `sti; hlt`, whose sti takes effect only at the hlt, so interrupts wake the halt (a spurious
// wake-up for the lock, which re-checks) but never land between the check and the hlt.
extern "C" bool spin_pv_halt(const uint8_t* p, uint8_t v, uint64_t sti);  // 1: halted
extern "C" const char spin_pv_halt_window[], spin_pv_halt_window_end[];
asm(R"(
    .text
    .globl spin_pv_halt, spin_pv_halt_window, spin_pv_halt_window_end
    .type spin_pv_halt, @function
spin_pv_halt:
    movl $1, %eax
spin_pv_halt_window:
    cmpb %sil, (%rdi)
    jne 3f
    testq %rdx, %rdx
    jz 2f
    sti
    hlt
    cli
    jmp spin_pv_halt_window_end
2:  hlt
spin_pv_halt_window_end:
    ret
3:  xorl %eax, %eax
    ret
    .size spin_pv_halt, . - spin_pv_halt
)");

bool pv_wait(const uint8_t* p, uint8_t v) {
    const uint64_t f = irq_save();
    // The halt log's span (lockstat.h), written before interrupts may come back on. No hlt
    // ran when *p had already changed: then there is no span, only halted_since to clear.
    const uint64_t enter = halt_log_begin();
    const bool halted = spin_pv_halt(p, v, f & arch::kFlagIF);
    if (halted) halt_log_end(enter);
    else halt_log_cancel(enter);
    irq_restore(f);
    return halted;
}

void pv_count_event(sl::PvEvent e) {
    if constexpr (kLevel == spinlab::InstrumentLevel::kOff) return;
    spinlab::PvLockCounters& c = lockstat_this_cpu()->pv;
    uint64_t* n = e == sl::PvEvent::kHalt   ? &c.pv_halts
                  : e == sl::PvEvent::kKick ? &c.pv_kicks
                  : e == sl::PvEvent::kSteal ? &c.pv_steals
                                             : &c.pv_spurious_wakeups;
    arch::percpu_inc(n);  // one instruction: atomic against this CPU's interrupts
}

void pv_kick(uint32_t cpu) {
    if (cpu >= g_ncpus) return;
    // The store that ends the waiter's wait must be visible before the kick can wake it.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    const uint32_t apic = g_prcbs[cpu].apic_id;
    if (g_kvm.pv_unhalt && !g_lockcfg.pvqspin_nmi_kick) kvm_kick_cpu(apic);
    else lapic_send_nmi(apic);
}

// --- the Env (spinlock/algorithms.h and lockstat/instrumented_lock.h list the methods) ---------
struct KernelLockEnv {
    uint64_t spin_start = 0;  // lockup detector: TSC at this wait's first check

    LockAlgorithm algorithm() const { return g_lockcfg.algorithm; }
    uint32_t cpu() const { return this_cpu()->number; }
    void relax() const {
        if (g_lockcfg.pause) arch::pause();
        else arch::barrier();
    }
    uint32_t pv_spin_bound() const { return g_lockcfg.pv_spin_bound; }
    void yield_to(uint32_t holder) const { kvm_yield_to(holder); }
    void spin_check(const sl::Lock& l, uint64_t spins) { lockup_check(l, spins, spin_start); }
    uint32_t pticket_timeout_unit() const { return sl::kPticketTimeoutUnit; }
    // lock=pvqspin (spinlock/pv_qspinlock.h): the halt and the kick above, the spin bound
    // (pvqspin-spin=) and the per-CPU counters (perfdata.h PvLockCounters; not at INSTRUMENT=0).
    bool pv_wait(const uint8_t* p, uint8_t v) const { return ::pv_wait(p, v); }
    void pv_kick(uint32_t cpu) const { ::pv_kick(cpu); }
    uint32_t pvqspin_spin_bound() const { return g_lockcfg.pvqspin_spin_bound; }
    void pv_count(sl::PvEvent e) const { pv_count_event(e); }
    // The host's per-vCPU word, or KVM's steal-time preempted byte (vcpu_off.h); false
    // for kNoCpu and without either source.
    bool vcpu_is_off(uint32_t cpu) const { return vcpu_off(cpu); }
    uint64_t now() const { return ls::read_clock(g_lockcfg.clock); }
    bool time_all() const { return g_lockcfg.time_all; }  // timing=all (lockstat/timing.h)
    spinlab::CpuPerfData* perf() const { return lockstat_this_cpu(); }
    const ls::SpinlockParams& params() const { return g_spinlock_params; }
    ls::StealSample steal(uint32_t cpu) const { return kvm_steal(cpu); }
    uint64_t irq_save() const { return ::irq_save(); }
    void irq_restore(uint64_t f) const { ::irq_restore(f); }
    bool tracing() const { return locktrace_spin_tracing(); }
    void trace_release(const sl::Lock& l, uint64_t release_tsc) const {
        locktrace_spin_release(l, release_tsc);
    }
};


inline void take(Spinlock* l, const void* site) {
    const uint32_t me = cpu_number();
    // holder_cpu is only ever our number while we hold it (we write it after taking the lock
    // and clear it before letting go), so this is exact, and it keeps an MCS node from being
    // queued behind itself.
    if (spin_holder_cpu(l) == me) panic("spinlock %s: recursive acquisition", l->core.name);
    const bool checks = __atomic_load_n(&g_lock_order_checks, __ATOMIC_RELAXED);
    if (checks) check_order(l, site, me);
    sl::McsNode* n = sl::uses_queue_node(g_lockcfg.algorithm) ? alloc_mcs_node(me) : nullptr;
    KernelLockEnv env;
    ls::lock_acquire<kLevel>(l->core, n, env);
    l->core.holder_site = site;
    if (checks) note_held(l, me);
}

inline void give(Spinlock* l) {
    const uint32_t me = cpu_number();
    if (spin_holder_cpu(l) != me)
        panic("spinlock %s: released by cpu %u, not the holder", l->core.name, me);
    // The node must be read before the release: afterwards a successor owns mcs_owner.
    sl::McsNode* n = sl::uses_queue_node(g_lockcfg.algorithm) ? l->core.mcs_owner : nullptr;
    if (__atomic_load_n(&g_lock_order_checks, __ATOMIC_RELAXED)) note_released(l, me);
    KernelLockEnv env;
    ls::lock_release<kLevel>(l->core, env);  // release store: the critical section stays above
    if (n) free_mcs_node(me, n);
}

}  // namespace

void spin_pv_nmi(uint64_t* rip) {
    const uint64_t at = *rip;
    if (at >= uint64_t(spin_pv_halt_window) && at < uint64_t(spin_pv_halt_window_end))
        *rip = uint64_t(spin_pv_halt_window_end);
}

bool spin_pv_wait(const uint8_t* p, uint8_t v) { return pv_wait(p, v); }
void spin_pv_kick(uint32_t cpu) { pv_kick(cpu); }

void spin_init(Spinlock* l, const char* name) { spin_init_class(l, name, lock_class_for_name(name)); }

void spin_init_class(Spinlock* l, const char* name, uint32_t class_id) {
    sl::lock_init(l->core, name, class_id);
    lockclass_count_lock(l->core.class_id);
}

bool spin_is_locked(const Spinlock* l) { return sl::is_locked(l->core, g_lockcfg.algorithm); }

bool spin_holding(const Spinlock* l) {
    return spin_is_locked(l) && spin_holder_cpu(l) == cpu_number();
}

// The count moves by one %gs-relative instruction (prcb.h says why): while it is 0 the thread
// may be moved to another CPU at any instruction boundary.
void preempt_disable() {
    preempt_count_inc();
    arch::barrier();
}

void preempt_enable() {
    arch::barrier();
    if (preempt_count_dec() && arch::irqs_enabled() && resched_pending_take()) yield();
}

void spin_lock(Spinlock* l) {
    preempt_disable();
    take(l, __builtin_return_address(0));
}

void spin_unlock(Spinlock* l) {
    give(l);
    preempt_enable();
}

uint64_t spin_lock_irqsave(Spinlock* l) {
    uint64_t flags = irq_save();
    preempt_count_inc();
    take(l, __builtin_return_address(0));
    return flags;
}

void spin_unlock_irqrestore(Spinlock* l, uint64_t flags) {
    give(l);
    preempt_count_dec();
    irq_restore(flags);
}

void spin_release_raw(Spinlock* l) {
    give(l);
    preempt_count_dec();
}

void spin_acquire_raw(Spinlock* l) {
    preempt_count_inc();  // interrupts may be on here (sleep_on of a spin_lock'ed lock)
    take(l, __builtin_return_address(0));
}
