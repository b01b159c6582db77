// kern/selftest.cc: the self-test runner (see selftest.h) and the registry of suites.
#include "selftest.h"

#include <stdarg.h>

#include "../arch/x86.h"
#include "../lib/format.h"
#include "console.h"
#include "lapic.h"
#include "mem.h"
#include "prcb.h"
#include "sched.h"

extern const SelfTestSuite kSuiteSmp, kSuiteSpinlock, kSuiteSched, kSuiteMem, kSuiteUser,
    kSuiteLockstat, kSuiteTrace, kSuiteTraceModes, kSuiteVcpuState, kSuiteVcpuStateHost,
    kSuiteLockWaitHost, kSuiteClock, kSuiteHaltLog;

namespace {

const SelfTestSuite* const kSuites[] = {&kSuiteSmp,      &kSuiteSpinlock, &kSuiteSched,
                                         &kSuiteMem,      &kSuiteUser,     &kSuiteLockstat,
                                         &kSuiteTrace,    &kSuiteTraceModes, &kSuiteVcpuState,
                                         &kSuiteVcpuStateHost, &kSuiteLockWaitHost, &kSuiteClock,
                                         &kSuiteHaltLog};

Spinlock result_lock = SPINLOCK_INIT("selftest");
// result_lock must be held when using these:
bool failed;
char first_failure[256];

bool selected(const char* which, const SelfTestSuite& s) {
    const char* suite = s.name;
    if (which[0] == 'a' && which[1] == 'l' && which[2] == 'l' && which[3] == '\0')
        return !s.by_name_only;
    for (const char* p = which; *p;) {
        const char* q = p;
        while (*q && *q != ',') q++;
        int n = int(q - p), i = 0;
        while (i < n && suite[i] == p[i]) i++;
        if (i == n && suite[i] == '\0') return true;
        p = *q ? q + 1 : q;
    }
    return false;
}

struct Job {
    void (*fn)(int, void*);
    void* arg;
    int index;
};

void job_main(void* p) {
    Job* j = static_cast<Job*>(p);
    j->fn(j->index, j->arg);
}

void test_main(void* p) { static_cast<const SelfTest*>(p)->fn(); }

}  // namespace

void selftest_fail(const char* file, int line, const char* fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    SpinGuardIrq g(&result_lock);
    if (!failed) format(first_failure, sizeof first_failure, "%s:%d: %s (cpu %u)", file, line, msg, cpu_number());
    failed = true;
}

void run_on_cpus(int n, void (*fn)(int, void*), void* arg) {
    Job* jobs = new Job[n];
    Thread** ts = new Thread*[n];
    for (int i = 0; i < n; i++) {
        jobs[i] = {fn, arg, i};
        ts[i] = thread_spawn("job", job_main, &jobs[i], i % int(g_ncpus));
        if (!ts[i]) panic("run_on_cpus: cannot create thread %d", i);
    }
    for (int i = 0; i < n; i++) thread_join(ts[i]);
    delete[] ts;
    delete[] jobs;
}

void selftest_run(const char* which) {
    int passed = 0, nfailed = 0, ran = 0;
    // The self-test kernel checks the lock order (lockclass.h) on every acquisition.
    __atomic_store_n(&g_lock_order_checks, true, __ATOMIC_RELAXED);
    kprintf("selftest: running '%s' on %u CPUs\n", which, g_ncpus);
    for (const SelfTestSuite* s : kSuites) {
        if (!selected(which, *s)) continue;
        for (int i = 0; i < s->count; i++) {
            const SelfTest& t = s->tests[i];
            {
                SpinGuardIrq g(&result_lock);
                failed = false;
            }
            kprintf("[ RUN      ] %s.%s\n", s->name, t.name);
            uint64_t t0 = arch::rdtsc_lfence();
            Thread* th = thread_spawn(t.name, test_main, const_cast<SelfTest*>(&t));
            if (!th) panic("selftest: cannot create a thread");
            thread_join(th);
            uint64_t ms = (arch::rdtsc_lfence() - t0) / (g_tsc_hz / 1000);
            ran++;
            if (failed) {
                nfailed++;
                kprintf("[  FAILED  ] %s.%s (%lu ms): %s\n", s->name, t.name, ms, first_failure);
            } else {
                passed++;
                kprintf("[       OK ] %s.%s (%lu ms)\n", s->name, t.name, ms);
            }
        }
    }
    if (ran == 0) {
        kprintf("selftest: no suite matches '%s'; suites:", which);
        for (const SelfTestSuite* s : kSuites) kprintf(" %s", s->name);
        kprintf("\n");
        nfailed = 1;
    }
    kprintf("%d passed, %d failed\n", passed, nfailed);
    qemu_exit(nfailed ? kExitFail : kExitPass);
}
