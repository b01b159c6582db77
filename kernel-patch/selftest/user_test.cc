// selftest/user_test.cc: ring-3 programs from the initial ramdisk: they run on every CPU, their
// threads run in parallel, a faulting program is killed and the next one runs, hostile system
// call arguments are answered with a status.
#include "../kern/console.h"
#include "../kern/locktrace.h"
#include "../kern/mem.h"
#include "../kern/prcb.h"
#include "../kern/proc.h"
#include "../kern/selftest.h"
#include "spinlab/syscall.h"

namespace {

// Runs /bin/<argv[0]> with argv as a child of the kernel; returns its exit status.
int run(bool privileged, const char* const* argv, int argc) {
    char path[64] = "/bin/";
    int k = 5;
    for (const char* p = argv[0]; *p && k < 63; p++) path[k++] = *p;
    path[k] = '\0';
    int64_t pid = proc_spawn(path, argv, argc, privileged, nullptr);
    if (pid < 0) {
        selftest_fail(__FILE__, __LINE__, "spawn %s: %s", path, spinlab::error_name(pid));
        return -1;
    }
    int code = -1;
    if (proc_wait(nullptr, int(pid), &code) != pid) selftest_fail(__FILE__, __LINE__, "wait failed");
    return code;
}

template <int N>
int run(const char* const (&argv)[N], bool privileged = true) {
    return run(privileged, argv, N);
}

void needs_initrd() {
    if (!proc_initrd_present()) selftest_fail(__FILE__, __LINE__, "no initial ramdisk (boot with -initrd)");
}

void hello_runs_and_exits() {
    needs_initrd();
    const char* argv[] = {"hello", "--exit", "42"};
    TEST_CHECK_EQ(run(argv), 42);
}

void arguments_reach_the_program() {
    needs_initrd();
    const char* argv[] = {"usertest", "args", "a", "bb", "ccc"};
    TEST_CHECK_EQ(run(argv), 5 * 10 + 6);
}

void runs_on_every_cpu() {
    const char* argv[] = {"usertest", "cpus"};
    TEST_CHECK_EQ(run(argv), 0);
}

void threads_run_in_parallel() {
    const char* argv[] = {"usertest", "parallel"};
    TEST_CHECK_EQ(run(argv), 0);
}

void threads_join_and_lock() {
    const char* argv[] = {"usertest", "threads"};
    TEST_CHECK_EQ(run(argv), 0);
}

void thread_limit_refused_and_nothing_leaks() {
    size_t heap0 = heap_live_blocks();
    uint64_t frames0 = pmm_free_frames();
    const char* argv[] = {"usertest", "thread-limit"};
    TEST_CHECK_EQ(run(argv), 0);
    TEST_CHECK_EQ(heap_live_blocks(), heap0);
    TEST_CHECK_EQ(pmm_free_frames(), frames0);
}

void faulting_program_is_killed_and_the_next_runs() {
    size_t heap0 = heap_live_blocks();
    uint64_t frames0 = pmm_free_frames();
    struct { const char* what; int code; } cases[] = {
        {"read-kernel", 128 + 14}, {"write-kernel", 128 + 14}, {"unmapped", 128 + 14},
        {"gp", 128 + 13}, {"ud", 128 + 6}, {"divide", 128 + 0}, {"exec-data", 128 + 14}, {"write-text", 128 + 14},
    };
    for (auto& c : cases) {
        const char* argv[] = {"fault", c.what};
        int code = run(argv);
        if (code != c.code) selftest_fail(__FILE__, __LINE__, "fault %s: status %d, want %d", c.what, code, c.code);
        const char* hello[] = {"hello", "--exit", "0"};
        TEST_CHECK_EQ(run(hello), 0);
    }
    // Killed processes leave nothing behind.
    TEST_CHECK_EQ(heap_live_blocks(), heap0);
    TEST_CHECK_EQ(pmm_free_frames(), frames0);
}

void bad_pointers_get_statuses() {
    const char* argv[] = {"usertest", "badptr"};
    TEST_CHECK_EQ(run(argv), 0);
}

void syscall_fuzz_survives() {
    const char* argv[] = {"usertest", "fuzz", "20000", "4242"};
    TEST_CHECK_EQ(run(argv), 0);
}

void privilege_is_inherited_and_can_be_dropped() {
    const char* argv[] = {"usertest", "privilege"};
    TEST_CHECK_EQ(run(argv, true), 0);
    TEST_CHECK_EQ(run(argv, false), 1);
    const char* drop[] = {"usertest", "spawn-unpriv"};
    TEST_CHECK_EQ(run(drop), 0);
}

// lockbench's ring-3 locks are the kernel's lock code counted in the kernel's per-CPU data:
// with --verify it resets its classes, runs, and compares the kernel's counts with its own
// (and the invariant uncontended + waits + overflow == acquisitions).
void lockbench_counts_agree_with_kernel() {
    const char* argv[] = {"lockbench", "--duration-ms", "500", "--locks", "3", "--pattern", "random",
                          "--threads-per-cpu", "2", "--verify"};
    TEST_CHECK_EQ(run(argv), 0);
}

// spinstat sets the tracing parameters when privileged; unprivileged it is refused
// (STATUS_ACCESS_DENIED) and exits 1; below a minimum it is refused too.
void spinstat_sets_parameters_only_privileged() {
    const char* set[] = {"spinstat", "--hold-threshold", "2000000"};
    TEST_CHECK_EQ(run(set, false), 1);
    TEST_CHECK_EQ(run(set, true), 0);
    const char* low[] = {"spinstat", "--hold-threshold", "5"};
    TEST_CHECK_EQ(run(low, true), 1);
    const char* restore[] = {"spinstat", "--hold-threshold", "1000000"};
    TEST_CHECK_EQ(run(restore, true), 0);
    const char* table[] = {"spinstat", "--per-cpu"};
    TEST_CHECK_EQ(run(table, false), 0);  // reading needs no privilege
}

// The tracing parameters a workload maps (what lockbench's ring-3 locks read) are the kernel's
// live values: a set through the system call shows there at once (usertest params).
void mapped_parameters_follow_a_set() {
    const char* argv[] = {"usertest", "params"};
    TEST_CHECK_EQ(run(argv), 0);
}

// The futex-like word wait of ring-3 locks that block (kSysWordWait/kSysWordWake, used by
// lockbench's pvqspin): refusals, one sleeper woken by one wake, and a 4,000-hand-over
// ping-pong that loses no wake (usertest word-wait).
void word_wait_sleeps_until_woken() {
    const char* argv[] = {"usertest", "word-wait"};
    TEST_CHECK_EQ(run(argv), 0);
}

// spinstat starts and stops a trace session from inside the guest when privileged (circular by
// default: nothing drains it in the guest); unprivileged, each is refused (access denied, exit 1)
// and the session is untouched; the status needs no privilege; an unknown group is a usage error.
void spinstat_traces_only_privileged() {
    if (!kLocktraceBuilt) return;  // INSTRUMENT=0: no sessions
    auto session = [] {
        spinlab::TraceSessionInformation s{};
        locktrace_query(&s);
        return s;
    };
    const char* start[] = {"spinstat", "--trace-start", "spinlock,cswitch"};
    TEST_CHECK_EQ(run(start, false), 1);
    TEST_CHECK(session().state != uint32_t(spinlab::TraceState::kRunning));
    TEST_CHECK_EQ(run(start, true), 0);
    spinlab::TraceSessionInformation s = session();
    TEST_CHECK_EQ(s.state, uint32_t(spinlab::TraceState::kRunning));
    TEST_CHECK_EQ(s.enable_flags, spinlab::kTraceGroupSpinlock | spinlab::kTraceGroupContextSwitch);
    TEST_CHECK_EQ(s.logger_mode, uint32_t(spinlab::TraceLoggerMode::kCircular));
    const char* status[] = {"spinstat", "--trace-status"};
    TEST_CHECK_EQ(run(status, false), 0);
    const char* stop[] = {"spinstat", "--trace-stop"};
    TEST_CHECK_EQ(run(stop, false), 1);
    TEST_CHECK_EQ(session().state, uint32_t(spinlab::TraceState::kRunning));
    TEST_CHECK_EQ(run(stop, true), 0);
    TEST_CHECK_EQ(session().state, uint32_t(spinlab::TraceState::kStopped));
    TEST_CHECK(session().totals.events_written > 0);  // the context switches of the programs above
    const char* bad[] = {"spinstat", "--trace-start", "locks"};
    TEST_CHECK_EQ(run(bad, true), 2);
}

void unprivileged_workload_cannot_map_counters() {
    const char* argv[] = {"lockbench", "--duration-ms", "10"};
    TEST_CHECK_EQ(run(argv, false), 1);
}

// A value outside its option's row (user/lib/ulib.h: a number's range, a choice's words) is a
// usage error (exit 2) before the program does anything: lockbench's lock count, a pattern it
// does not know, a spinlock parameter over 32 bits, a LoggerMode name spinstat does not know.
void option_values_outside_their_rows_are_refused() {
    const char* no_locks[] = {"lockbench", "--locks", "0"};
    TEST_CHECK_EQ(run(no_locks), 2);
    const char* pattern[] = {"lockbench", "--pattern", "diagonal"};
    TEST_CHECK_EQ(run(pattern), 2);
    const char* wide[] = {"spinstat", "--hold-threshold", "4294967296"};
    TEST_CHECK_EQ(run(wide), 2);
    const char* mode[] = {"spinstat", "--trace-mode", "ring", "--trace-status"};
    TEST_CHECK_EQ(run(mode), 2);
}

const SelfTest kTests[] = {
    {"hello_runs_and_exits", hello_runs_and_exits},
    {"arguments_reach_the_program", arguments_reach_the_program},
    {"runs_on_every_cpu", runs_on_every_cpu},
    {"threads_run_in_parallel", threads_run_in_parallel},
    {"threads_join_and_lock", threads_join_and_lock},
    {"thread_limit_refused_and_nothing_leaks", thread_limit_refused_and_nothing_leaks},
    {"faulting_program_is_killed_and_the_next_runs", faulting_program_is_killed_and_the_next_runs},
    {"bad_pointers_get_statuses", bad_pointers_get_statuses},
    {"syscall_fuzz_survives", syscall_fuzz_survives},
    {"privilege_is_inherited_and_can_be_dropped", privilege_is_inherited_and_can_be_dropped},
    {"lockbench_counts_agree_with_kernel", lockbench_counts_agree_with_kernel},
    {"spinstat_sets_parameters_only_privileged", spinstat_sets_parameters_only_privileged},
    {"mapped_parameters_follow_a_set", mapped_parameters_follow_a_set},
    {"word_wait_sleeps_until_woken", word_wait_sleeps_until_woken},
    {"spinstat_traces_only_privileged", spinstat_traces_only_privileged},
    {"unprivileged_workload_cannot_map_counters", unprivileged_workload_cannot_map_counters},
    {"option_values_outside_their_rows_are_refused", option_values_outside_their_rows_are_refused},
};

}  // namespace

extern const SelfTestSuite kSuiteUser = {"user", kTests, sizeof kTests / sizeof kTests[0]};
