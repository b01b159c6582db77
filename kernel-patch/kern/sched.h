// kern/sched.h: kernel threads and the preemptive scheduler (one global run queue under
// sched_lock, per-CPU idle threads, affinity, sleep/wakeup on a channel).
#pragma once
#include <stdint.h>

#include "../lib/runqueue.h"
#include "spinlock.h"

struct Context;   // callee-saved registers on a thread's stack (swtch.S)
struct Process;   // the user-mode layer's (kern/proc.h)

enum class ThreadState : uint8_t { kUnused, kEmbryo, kRunnable, kRunning, kSleeping, kZombie };

constexpr int kMaxThreads = 512;
constexpr uint64_t kKernelStackSize = 16384;

struct Thread {
    // sched_lock must be held when using these:
    ThreadState state;
    Thread* rq_next;         // run queue link
    int affinity;            // kAnyCpu or the only CPU this thread may run on
    const void* wait_chan;   // what a sleeping thread waits for
    uint64_t wake_tsc;       // timed sleep: wake at this TSC (0 = no deadline)
    bool joined;             // someone will (or did) collect it
    bool wake_first;         // woken, it goes to the head of the run queue (thread_wake_first)

    // Fixed at creation:
    int tid;
    char name[24];
    uint8_t* kstack;         // kKernelStackSize bytes
    void (*fn)(void*);
    void* arg;

    // Owned by the thread itself / the CPU running it:
    Context* ctx;
    int last_cpu;
    uint64_t switches_in;    // times scheduled
    uint64_t cpus_seen;      // bit per CPU it has run on (tests of affinity and migration)
    int exit_code;
    Process* proc;           // nullptr for kernel threads
    // The user-mode logger's cursor of this thread's ring (kern/locktrace.cc, kSysTraceRing),
    // or null: set by the thread itself, read by the CPU running it.
    void* trace_ring = nullptr;
};

void sched_init();                     // boot CPU: thread table, idle threads
void sched_init_cpu();                 // every CPU: adopt the idle thread for this stack
[[noreturn]] void scheduler();         // every CPU, last: the idle loop

Thread* thread_create(const char* name, void (*fn)(void*), void* arg, int affinity = kAnyCpu);
void thread_start(Thread* t);          // make runnable (created threads start suspended)
// A service thread that sleeps for I/O and works briefly when woken (the host channel's server):
// woken, it runs before every thread already queued, as Windows boosts a thread whose I/O
// completed. Without it an answer waits behind every runnable workload thread for a slice each,
// which on a throttled, loaded host took over a second. Call before thread_start.
void thread_wake_first(Thread* t);
void thread_discard(Thread* t);        // free a created thread that was never started
Thread* thread_spawn(const char* name, void (*fn)(void*), void* arg, int affinity = kAnyCpu);
[[noreturn]] void thread_exit(int code);
int thread_join(Thread* t);            // waits for exit, frees it, returns its exit code
Thread* current_thread();
const char* thread_name(const Thread* t);
void thread_set_affinity(int cpu);     // pin the calling thread (kAnyCpu to unpin); migrates now

// Calls fn for every live thread under the scheduler lock (trace rundown).
void sched_for_each_thread(void (*fn)(const Thread* t));

void yield();
void sched_tick();                     // timer interrupt: account, wake sleepers, maybe preempt
void sleep_on(const void* chan, Spinlock* lk);  // lk held (irqsave'd by caller); re-taken
void wakeup(const void* chan);
void sleep_ticks(uint64_t ticks);      // timed sleep (timer ticks)
void sleep_us(uint64_t us);

extern Spinlock g_sched_lock;
