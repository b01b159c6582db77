// kern/stackprobe.cc: see stackprobe.h.
#include "stackprobe.h"

#include "../arch/x86.h"
#include "sched.h"
#include "spinlock.h"

namespace {
Spinlock probe_lock = SPINLOCK_INIT("bench");
}  // namespace

// Outside the anonymous namespace and not inlined: the names the tests look for.
__attribute__((noinline)) void stackprobe_inner() {
    spin_lock(&probe_lock);
    const uint64_t until = arch::rdtsc_lfence() + 2000000;
    while (arch::rdtsc_lfence() < until) arch::pause();
    spin_unlock(&probe_lock);
    asm volatile("" ::: "memory");  // no tail call: the frame stays
}

__attribute__((noinline)) void stackprobe_middle() {
    stackprobe_inner();
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void stackprobe_outer(void*) {
    for (;;) {
        stackprobe_middle();
        sleep_ticks(5);
    }
}

void stackprobe_start() { thread_spawn("stackprobe", stackprobe_outer, nullptr); }
