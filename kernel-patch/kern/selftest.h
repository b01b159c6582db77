// kern/selftest.h: in-guest self-tests. A suite is an array of tests; each test runs in its own
// kernel thread and fails through TEST_CHECK. selftest_run prints one line per test and the
// closing "N passed, N failed", then leaves QEMU with a status (isa-debug-exit).
#pragma once
#include <stdint.h>

#include "spinlab/status.h"

struct SelfTest {
    const char* name;
    void (*fn)();
};

struct SelfTestSuite {
    const char* name;
    const SelfTest* tests;
    int count;
    bool by_name_only = false;  // not in "all": it needs something outside the guest (the host)
};

[[noreturn]] void selftest_run(const char* which);   // "all" or "suite1,suite2"
void selftest_fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TEST_CHECK(cond)                                                   \
    do {                                                                   \
        if (!(cond)) selftest_fail(__FILE__, __LINE__, "check failed: %s", #cond); \
    } while (0)
#define TEST_CHECK_EQ(a, b)                                                          \
    do {                                                                             \
        uint64_t a_ = uint64_t(a), b_ = uint64_t(b);                                 \
        if (a_ != b_)                                                                \
            selftest_fail(__FILE__, __LINE__, "%s == %s: %lu != %lu", #a, #b, a_, b_); \
    } while (0)
// A system-information status, named on failure (kSuccess, kAccessDenied, ...).
#define TEST_CHECK_STATUS(got, want)                                                 \
    do {                                                                             \
        spinlab::Status g_ = (got), w_ = (want);                                     \
        if (g_ != w_)                                                                \
            selftest_fail(__FILE__, __LINE__, "%s: %s, want %s", #got,               \
                          spinlab::status_name(g_), spinlab::status_name(w_));       \
    } while (0)

// Run fn(i) on n threads, thread i pinned to CPU i % ncpus; returns when all have finished.
void run_on_cpus(int n, void (*fn)(int i, void* arg), void* arg);
