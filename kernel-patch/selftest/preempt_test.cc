// selftest/preempt_test.cc: the preemption count stays right, and current_thread() names the
// caller, when the thread is preempted, and moved to another CPU, at any instruction boundary
// of spin_lock, spin_unlock and current_thread where the timer may preempt it (interrupts on,
// count 0 on the CPU it is on).
//
// The timer hits such a boundary only by chance (once in a while under a busy host, where a
// vCPU is descheduled mid-function and its pending tick lands on resume). This test hits every
// one of them on purpose: it single-steps the call (RFLAGS.TF) and, at the k-th preemptible
// boundary, does what the exit path of a timer interrupt does when the slice is over (yield),
// with the affinity moved to the next CPU so the thread resumes there. Then it checks the count
// on the CPU it ended on (1 while holding the lock, 0 after) and, holding nothing, on the CPU
// it started on (0), and that current_thread() returned the test's own thread. One round per
// k, until k passes the last boundary. A wrong count is reported and put right, so the suite
// goes on.
#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/spinlock.h"
#include "../kern/trap.h"

namespace {

constexpr uint64_t kFlagTF = 1u << 8;
constexpr int kMaxBoundaries = 64;   // far more than the few instructions before the count moves
constexpr int kMaxLostRounds = 16;

// Written by the test thread and by its own #DB handler (same thread, interrupts off).
struct Plan {
    Thread* thread;    // the stepped thread
    int target;        // preempt at this preemptible boundary of the round (0-based)
    int seen;          // preemptible boundaries met so far in the round
    bool migrated;     // the round reached its target
    bool returned;     // the stepped call has returned: the test's own code is not explored
    uint64_t rip;      // where
    uint32_t from, to; // CPUs before and after
};
Plan plan;

bool on_own_stack(const TrapFrame* tf) {
    const uint64_t lo = uint64_t(plan.thread->kstack);
    return tf->rsp >= lo && tf->rsp < lo + kKernelStackSize;
}

void on_step(TrapFrame* tf) {
    // A voluntary switch inside the stepped call (preempt_enable's yield) carries the live TF
    // into the scheduler's context: stop stepping whatever is not the test thread's own code.
    if (current_thread() != plan.thread || !on_own_stack(tf)) {
        tf->rflags &= ~kFlagTF;
        return;
    }
    if (plan.returned) return;
    // Where the timer could not preempt, neither do we.
    if (!(tf->rflags & arch::kFlagIF) || this_cpu()->preempt_disable != 0) return;
    if (plan.seen++ != plan.target) return;
    plan.migrated = true;
    plan.rip = tf->rip;
    plan.from = cpu_number();
    const uint32_t to = (plan.from + 1) % g_ncpus;
    if (to == plan.from) yield();         // one CPU: preempted, nowhere else to go
    else thread_set_affinity(int(to));    // yields; resumes on `to`
    plan.to = cpu_number();
}

inline void step_on() { asm volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc"); }

// Stops stepping; returns whether the thread was still being stepped (a voluntary switch
// inside the call loses TF, and the round must be run again).
inline bool step_off() {
    uint64_t f;
    asm volatile("pushfq; popq %0; pushfq; andq $-257, (%%rsp); popfq"  // -257 = ~TF
                 : "=r"(f) : : "memory", "cc");
    return f & kFlagTF;
}

struct CountSeen {
    uint32_t cpu;
    int count;
};

// With interrupts off, so the CPU and its count belong together. If it is not `want`, says so
// and sets it to `want`.
CountSeen expect_count(int want) {
    uint64_t f = irq_save();
    Prcb* c = this_cpu();
    CountSeen s{c->number, c->preempt_disable};
    if (s.count != want) c->preempt_disable = want;
    irq_restore(f);
    return s;
}

enum Phase { kLock, kUnlock, kCurrent };
const char* const kPhase[3] = {"spin_lock", "spin_unlock", "current_thread"};

void report(int phase, const char* what, const CountSeen& s, int want) {
    selftest_fail(__FILE__, __LINE__,
                  "%s, preempted at rip %p and moved from cpu %u to cpu %u: %s cpu %u has "
                  "preempt_disable %d, want %d",
                  kPhase[phase], reinterpret_cast<void*>(plan.rip), plan.from, plan.to, what,
                  s.cpu, s.count, want);
}

// Holding no lock, the count must be 0 on the CPU the round ended on and on the one it
// started on (where a stale increment lands). Going back there switches threads, and sched()
// checks the count of the CPU it leaves, so the current CPU is put right first.
void check_after_round(int phase) {
    CountSeen s = expect_count(0);
    if (s.count != 0) report(phase, "afterwards", s, 0);
    thread_set_affinity(0);
    s = expect_count(0);
    if (s.count != 0) report(phase, "afterwards", s, 0);
}

// Returns the number of preemptible boundaries explored (each with a preemption there).
int explore(int phase, Spinlock* l) {
    Thread* got = nullptr;
    int lost = 0;
    thread_set_affinity(0);  // every round starts on CPU 0
    for (int k = 0; k < kMaxBoundaries;) {
        if (phase == kUnlock) spin_lock(l);
        plan.target = k;
        plan.seen = 0;
        plan.migrated = false;
        plan.returned = false;
        step_on();
        if (phase == kLock) spin_lock(l);
        else if (phase == kUnlock) spin_unlock(l);
        else got = current_thread();
        __atomic_store_n(&plan.returned, true, __ATOMIC_RELAXED);
        const bool stepped = step_off();
        if (phase == kCurrent && got != plan.thread)
            selftest_fail(__FILE__, __LINE__,
                          "current_thread, preempted at rip %p and moved from cpu %u to cpu %u: "
                          "returned thread '%s', want '%s'",
                          reinterpret_cast<void*>(plan.rip), plan.from, plan.to,
                          got ? thread_name(got) : "(null)", thread_name(plan.thread));
        if (phase == kLock) {
            CountSeen s = expect_count(1);
            if (s.count != 1) report(phase, "holding the lock,", s, 1);
            if (spin_holder_cpu(l) != s.cpu)
                selftest_fail(__FILE__, __LINE__, "spin_lock: holder cpu %u, running on cpu %u",
                              spin_holder_cpu(l), s.cpu);
            spin_unlock(l);
        }
        check_after_round(phase);
        if (!stepped && !plan.migrated) {
            if (++lost > kMaxLostRounds) {
                selftest_fail(__FILE__, __LINE__, "%s: stepping lost %d times in a row",
                              kPhase[phase], lost);
                return k;
            }
            continue;  // the same k again
        }
        lost = 0;
        if (!plan.migrated) return k;  // k is past the last preemptible boundary
        k++;
    }
    selftest_fail(__FILE__, __LINE__, "%s: more than %d preemptible boundaries", kPhase[phase],
                  kMaxBoundaries);
    return kMaxBoundaries;
}

void begin() {
    plan = Plan{};
    uint64_t f = irq_save();  // not current_thread(): that is what one of the tests checks
    plan.thread = this_cpu()->current;
    irq_restore(f);
    g_kernel_debug_handler = on_step;
}

void end() {
    g_kernel_debug_handler = nullptr;
    thread_set_affinity(kAnyCpu);
}

const char* where_to() { return g_ncpus > 1 ? "to the next CPU" : "nowhere (1 CPU)"; }

}  // namespace

// In the spinlock suite (spinlock_test.cc), so it runs wherever spinlocks are tested.
void preempt_count_survives_migration_at_every_boundary() {
    Spinlock l;
    spin_init(&l, "probe_migrate");
    begin();
    const int locked = explore(kLock, &l);
    const int unlocked = explore(kUnlock, &l);
    end();
    kprintf("preempt: preempted at %d boundaries in spin_lock and %d in spin_unlock, moving %s\n",
            locked, unlocked, where_to());
    // No single-step trap, no boundary: the path was not driven at all, which is a failure.
    TEST_CHECK(locked > 0);
    TEST_CHECK(unlocked > 0);
}

// In the sched suite (sched_test.cc).
void current_thread_survives_migration_at_every_boundary() {
    begin();
    const int n = explore(kCurrent, nullptr);
    end();
    kprintf("preempt: preempted at %d boundaries in current_thread, moving %s\n", n, where_to());
    TEST_CHECK(n > 0);
}
