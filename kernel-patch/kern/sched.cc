// kern/sched.cc: threads and the scheduler, in the manner of xv6: each CPU runs scheduler()
// on its idle thread; a thread gives up the CPU by calling sched() with sched_lock held, which
// switches back to the idle thread; the idle thread picks the next runnable thread allowed on
// this CPU and switches to it. sched_lock is held across every switch, so a thread's state and
// its place in the run queue always change together.
#include "locktrace.h"
#include "sched.h"

#include "../arch/x86.h"
#include "../lib/format.h"
#include "console.h"
#include "lapic.h"
#include "lockstat.h"
#include "mem.h"
#include "prcb.h"
#include "proc.h"
#include "region.h"
#include "address_space.h"

Spinlock g_sched_lock = SPINLOCK_INIT("sched");

struct Context {
    uint64_t r15, r14, r13, r12, rbx, rbp, rip;
};

extern "C" void swtch(Context** save, Context* load);

namespace {

// sched_lock must be held when using these:
Thread threads[kMaxThreads];
RunQueue<Thread> runq;
int next_tid = 1;
uint64_t idle_mask;        // bit per CPU halted in its idle loop

Thread idle_threads[kMaxCpus];
const char kTimerChan = 0;  // the channel timed sleepers wait on

// Switch from the current thread to this CPU's idle thread. sched_lock must be held (and only
// it: a second lock held across a switch would deadlock the next thread that wants it) and the
// current thread's state must already say why it stopped running.
void sched() {
    Prcb* c = this_cpu();
    Thread* t = c->current;
    if (!spin_holding(&g_sched_lock)) panic("sched: sched_lock not held");
    if (c->preempt_disable != 1) panic("sched: %s holds a spinlock other than sched_lock", t->name);
    if (arch::irqs_enabled()) panic("sched: interrupts enabled");
    if (t->state == ThreadState::kRunning) panic("sched: %s still running", t->name);
    locktrace_thread_off(t);  // its ring-3 events, before any other event of this CPU
    swtch(&t->ctx, c->sched_ctx);
}

// Wake one halted CPU that may run t, so it does not wait for its next timer tick.
void kick_for(const Thread* t) {
    uint64_t candidates = t->affinity == kAnyCpu ? idle_mask : idle_mask & (1ull << t->affinity);
    candidates &= ~(1ull << cpu_number());
    if (!candidates) return;
    int cpu = __builtin_ctzll(candidates);
    idle_mask &= ~(1ull << cpu);
    lapic_send_ipi(g_prcbs[cpu].apic_id, kVectorResched);
}

void make_runnable_locked(Thread* t) {
    locktrace_ready_thread(t);
    t->state = ThreadState::kRunnable;
    t->wait_chan = nullptr;
    t->wake_tsc = 0;
    if (t->wake_first) runq.push_front(t);
    else runq.push(t);
    kick_for(t);
}

void wakeup_locked(const void* chan) {
    for (Thread& t : threads)
        if (t.state == ThreadState::kSleeping && t.wait_chan == chan) make_runnable_locked(&t);
}

// The first code a new thread runs: the idle thread that switched to it holds sched_lock.
extern "C" void thread_entry() {
    spin_unlock_irqrestore(&g_sched_lock, arch::kFlagIF);
    Thread* t = current_thread();
    t->fn(t->arg);
    thread_exit(0);
}

void free_thread_locked(Thread* t) {
    page_free(uint64_t(t->kstack));
    for (uint64_t i = 1; i < kKernelStackSize / 4096; i++) page_free(uint64_t(t->kstack) + i * 4096);
    t->state = ThreadState::kUnused;
}

}  // namespace

void sched_init() {
    for (uint32_t i = 0; i < kMaxCpus; i++) {
        Thread* t = &idle_threads[i];
        t->state = ThreadState::kRunning;
        t->affinity = int(i);
        t->tid = 0;
        format(t->name, sizeof t->name, "idle%u", i);
    }
}

void sched_init_cpu() {
    Prcb* c = this_cpu();
    c->idle = &idle_threads[c->number];
    c->current = c->idle;
}

void scheduler() {
    Prcb* c = this_cpu();
    const uint64_t me = 1ull << c->number;
    for (;;) {
        uint64_t f = spin_lock_irqsave(&g_sched_lock);
        idle_mask &= ~me;  // awake (a waker that picked us cleared it already)
        Thread* t = runq.pick(int(c->number));
        if (!t) {
            // Nothing to run here: mark this CPU idle and halt with interrupts enabled.
            // "sti; hlt" is atomic with respect to interrupts, so a resched IPI sent after we
            // drop the lock still wakes us.
            idle_mask |= me;
            spin_unlock_irqrestore(&g_sched_lock, f & ~arch::kFlagIF);
            // Woken by an interrupt. Go back to sleep without sched_lock while our idle bit
            // is still set (no waker on another CPU chose us: kick_for clears the bit under
            // sched_lock before its IPI) and the run queue is empty (a thread our own
            // interrupt handler made runnable, e.g. CPU 0's timed sleepers, is pushed on this
            // CPU, so this racy read sees it). Idle CPUs then do not queue on sched_lock at
            // every timer tick: with a fair lock (lock=ticket, mcs) and more vCPUs than host
            // cores each of those acquisitions can wait for a descheduled vCPU.
            do {
                c->idle_halts++;
                // The halt log's span (lockstat.h): stamped with interrupts off on both
                // sides, so the span ends after the waking interrupt's handler.
                const uint64_t enter = halt_log_begin();
                arch::sti_hlt();
                arch::cli();
                halt_log_end(enter);
            } while ((__atomic_load_n(&idle_mask, __ATOMIC_RELAXED) & me) && runq.empty());
            continue;
        }
        t->state = ThreadState::kRunning;
        t->last_cpu = int(c->number);
        t->switches_in++;
        t->cpus_seen |= 1ull << c->number;
        c->current = t;
        c->ctx_switches++;
        c->slice_start = arch::rdtsc_lfence();
        c->tss.rsp0 = uint64_t(t->kstack) + kKernelStackSize;
        as_activate(t->proc ? t->proc->as : nullptr);
        locktrace_context_switch(c->idle, t);
        swtch(&c->sched_ctx, t->ctx);
        locktrace_context_switch(t, c->idle);  // t's state and wait reason as it left
        // Back here when t called sched(); it may have run on other CPUs meanwhile. Back on
        // the kernel's own page tables: t's address space may be freed once sched_lock drops.
        as_activate(nullptr);
        c->current = c->idle;
        spin_unlock_irqrestore(&g_sched_lock, f);
    }
}

Thread* thread_create(const char* name, void (*fn)(void*), void* arg, int affinity) {
    uint64_t stack = pages_alloc(kKernelStackSize / 4096);
    if (!stack) return nullptr;
    Thread* t = nullptr;
    {
        SpinGuardIrq g(&g_sched_lock);
        for (Thread& s : threads)
            if (s.state == ThreadState::kUnused) {
                t = &s;
                break;
            }
        if (!t) {
            for (uint64_t i = 0; i < kKernelStackSize / 4096; i++) page_free(stack + i * 4096);
            return nullptr;
        }
        *t = Thread{};
        t->state = ThreadState::kEmbryo;
        t->tid = next_tid++;
    }
    int n = 0;
    while (name[n] && n + 1 < int(sizeof t->name)) t->name[n] = name[n], n++;
    t->name[n] = '\0';
    t->affinity = affinity;
    t->fn = fn;
    t->arg = arg;
    t->kstack = reinterpret_cast<uint8_t*>(stack);
    t->last_cpu = -1;
    // Initial stack: a Context whose rip is thread_entry, above it a zero return address so
    // thread_entry starts with the stack aligned as after a call.
    uint64_t top = stack + kKernelStackSize - 8;
    auto* ctx = reinterpret_cast<Context*>(top - sizeof(Context));
    *ctx = Context{};
    ctx->rip = uint64_t(thread_entry);
    t->ctx = ctx;
    return t;
}

void thread_wake_first(Thread* t) {
    SpinGuardIrq g(&g_sched_lock);
    t->wake_first = true;
}

void thread_start(Thread* t) {
    locktrace_thread_event(spinlab::TraceEventType::kThreadStart, t);
    SpinGuardIrq g(&g_sched_lock);
    make_runnable_locked(t);
}

void sched_for_each_thread(void (*fn)(const Thread* t)) {
    SpinGuardIrq g(&g_sched_lock);
    for (Thread& t : threads)
        if (t.state != ThreadState::kUnused && t.state != ThreadState::kZombie) fn(&t);
}

void thread_discard(Thread* t) {
    SpinGuardIrq g(&g_sched_lock);
    if (t->state != ThreadState::kEmbryo) panic("thread_discard: %s was started", t->name);
    free_thread_locked(t);
}

Thread* thread_spawn(const char* name, void (*fn)(void*), void* arg, int affinity) {
    Thread* t = thread_create(name, fn, arg, affinity);
    if (t) thread_start(t);
    return t;
}

void thread_exit(int code) {
    Thread* t = current_thread();
    if (t == this_cpu()->idle) panic("thread_exit: the idle thread cannot exit");
    locktrace_thread_event(spinlab::TraceEventType::kThreadEnd, t);
    (void)spin_lock_irqsave(&g_sched_lock);
    t->exit_code = code;
    t->state = ThreadState::kZombie;
    wakeup_locked(t);
    sched();
    panic("thread_exit: zombie %s ran again", t->name);
}

int thread_join(Thread* t) {
    uint64_t f = spin_lock_irqsave(&g_sched_lock);
    t->joined = true;
    Thread* me = current_thread();
    while (t->state != ThreadState::kZombie) {
        me->wait_chan = t;
        me->state = ThreadState::kSleeping;
        sched();
    }
    int code = t->exit_code;
    // A zombie's stack is free once it has switched away for the last time, which happened
    // under sched_lock before we could see kZombie here... unless its CPU is still inside
    // swtch: the idle thread there releases sched_lock only after the switch completes, and
    // we hold sched_lock now, so the switch is complete.
    free_thread_locked(t);
    spin_unlock_irqrestore(&g_sched_lock, f);
    return code;
}

Thread* current_thread() { return this_cpu_current(); }  // one load: prcb.h says why
const char* thread_name(const Thread* t) { return t->name; }

void thread_set_affinity(int cpu) {
    Thread* t = current_thread();
    {
        SpinGuardIrq g(&g_sched_lock);
        t->affinity = cpu;
    }
    if (cpu != kAnyCpu && cpu != int(cpu_number())) yield();
}

void yield() {
    Thread* t = current_thread();
    if (t == this_cpu()->idle) return;
    uint64_t f = spin_lock_irqsave(&g_sched_lock);
    t->state = ThreadState::kRunnable;
    runq.push(t);
    kick_for(t);
    sched();
    spin_unlock_irqrestore(&g_sched_lock, f);
}

void sched_tick() {
    Prcb* c = this_cpu();
    region_clock_tick(c->number);  // the host's clock correlation reads these publications
    if (c->number == 0) {
        uint64_t now = arch::rdtsc_lfence();
        SpinGuardIrq g(&g_sched_lock);
        for (Thread& t : threads)
            if (t.state == ThreadState::kSleeping && t.wait_chan == &kTimerChan && now >= t.wake_tsc)
                make_runnable_locked(&t);
    }
    // The slice is one tick period of the thread's own time on this CPU, counted from when it
    // was switched in, not from the last tick: a thread switched in just before a tick still
    // runs a whole period. With a fair sched lock (lock=ticket, mcs) on a host with fewer
    // cores than vCPUs, taking sched_lock can wait for several descheduled vCPUs in turn, for
    // longer than a tick; with a slice that ended at the next tick, each CPU then went from one
    // yield straight into the next and no thread ran at all (4 vCPUs on 2 busy host cores: the
    // sched lock served ~180 acquisitions/s against ~1,000/s asked for; the self-tests stalled).
    if (c->current != c->idle && arch::rdtsc_lfence() - c->slice_start >= g_tsc_hz / g_timer_hz)
        c->resched_pending = true;
}

void sleep_on(const void* chan, Spinlock* lk) {
    Thread* t = current_thread();
    uint64_t f = spin_lock_irqsave(&g_sched_lock);
    spin_release_raw(lk);
    t->wait_chan = chan;
    t->state = ThreadState::kSleeping;
    sched();
    spin_unlock_irqrestore(&g_sched_lock, f);
    spin_acquire_raw(lk);
}

void wakeup(const void* chan) {
    SpinGuardIrq g(&g_sched_lock);
    wakeup_locked(chan);
}

void sleep_us(uint64_t us) {
    uint64_t deadline = arch::rdtsc_lfence() + us * (g_tsc_hz / 1000000);
    Thread* t = current_thread();
    uint64_t f = spin_lock_irqsave(&g_sched_lock);
    while (arch::rdtsc_lfence() < deadline) {
        t->wait_chan = &kTimerChan;
        t->wake_tsc = deadline;
        t->state = ThreadState::kSleeping;
        sched();
    }
    spin_unlock_irqrestore(&g_sched_lock, f);
}

void sleep_ticks(uint64_t ticks) { sleep_us(ticks * 1000000 / g_timer_hz); }
