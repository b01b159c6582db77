// selftest/trace_test.cc: trace sessions in the running kernel: control through the sysinfo
// handler, spinlock events against the counters for the same window, context switches pairing
// up per CPU, a circular session keeping the newest events. The suite reads the trace area the
// way the host does (locktrace/drain.h), after each session stops.
#include <spinlab/perfdata.h>
#include <spinlab/status.h>
#include <spinlab/syscall.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/lapic.h"
#include "../kern/lockclass.h"
#include "../kern/lockstat.h"
#include "../kern/locktrace.h"
#include "../kern/locktrace_stacks.h"
#include "../kern/prcb.h"
#include "../kern/proc.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/spinlock.h"
#include "../kern/sysinfo_glue.h"
#include "../locktrace/buffer_parser.h"
#include "../locktrace/drain.h"
#include "../locktrace/trace_session.h"
#include "../locktrace/stack_settings.h"
#include "../sysinfo/memory_buffer.h"
#include "trace_calls.h"

namespace {

using spinlab::InfoClass;
using spinlab::Status;
using spinlab::TraceSessionInformation;
namespace si = spinlab::sysinfo;
namespace lt = spinlab::locktrace;
constexpr auto kLevel = spinlab::lockstat::kBuildLevel;
// The lockstat suite's class: only self-tests take these locks, one test at a time.
constexpr uint32_t kClass = kLockClassLockstatTest;
Spinlock lock_t = SPINLOCK_INIT("lockstat_test");

using selftest_trace::trace_query;
using selftest_trace::trace_set;

TraceSessionInformation params(uint32_t flags, spinlab::TraceLoggerMode mode) {
    TraceSessionInformation s = lt::default_session_params();
    s.command = uint32_t(spinlab::TraceCommand::kStart);
    s.enable_flags = flags;
    s.logger_mode = uint32_t(mode);
    s.buffer_size = 16384;
    s.minimum_buffers = 2;
    s.maximum_buffers = 1024;
    s.flush_timer_ms = 0;
    return s;
}

void start(TraceSessionInformation s) { TEST_CHECK_STATUS(trace_set(s), Status::kSuccess); }
void stop() {
    TraceSessionInformation s{};
    s.event_trace_information_class = spinlab::kSpinlabTraceSession;
    s.command = uint32_t(spinlab::TraceCommand::kStop);
    TEST_CHECK_STATUS(trace_set(s), Status::kSuccess);
}

void set_spin_params(uint32_t spin, uint32_t contention) {
    spinlab::EventTraceSpinlockInformation p{5, spin, spinlab::kMinAcquireSampleRate, contention,
                                             spinlab::kMinHoldThreshold};
    si::MemoryBufferState st{reinterpret_cast<uint8_t*>(&p), sizeof p};
    uint32_t r;
    TEST_CHECK_STATUS(Status(sysinfo_set(uint32_t(InfoClass::kSystemPerformanceTraceInformation),
                                    si::memory_buffer(st), true, &r)),
                 Status::kSuccess);
}

// Every event the stopped session left on `cpu`, oldest first: f(header, event bytes).
// Returns how many buffers failed their checks, torn while read or refused by parse_buffer
// (must be 0).
template <class F>
uint64_t for_each_event_on(uint32_t cpu, F f) {
    const void* area = locktrace_area();
    spinlab::TraceAreaHeader h;
    const char* why = lt::area_parse(area, locktrace_area_size(), &h);
    if (why) {
        selftest_fail(__FILE__, __LINE__, "trace area: %s", why);
        return 1;
    }
    static uint8_t copy[1u << 20];  // BufferSize at most 1 MiB; tests run one at a time
    struct Ctx {
        F* f;
        uint64_t unparsed;
    } ctx{&f, 0};
    const uint64_t torn = lt::read_in_place(area, h, cpu, copy,
                                            [](void* arg, const uint8_t* data, uint32_t len) {
                                                auto& c = *static_cast<Ctx*>(arg);
                                                lt::BufferView v;
                                                if (lt::parse_buffer(data, len, &v) != lt::BufferError::kNone) {
                                                    c.unparsed++;
                                                    return;
                                                }
                                                lt::for_each_event(v, [&](const spinlab::TraceEventHeader& e,
                                                                          const uint8_t* p) { (*c.f)(e, p); });
                                            },
                                            &ctx);
    return torn + ctx.unparsed;
}

// --- tests ---------------------------------------------------------------------------------

void control_through_sysinfo() {
    if (!kLocktraceBuilt) {  // the baseline kernel has no trace sessions
        TraceSessionInformation s = params(spinlab::kTraceGroupAll, spinlab::TraceLoggerMode::kRealTime);
        TEST_CHECK_STATUS(trace_set(s), Status::kInvalidInfoClass);
        return;
    }
    // A group this kernel writes: spinlock events need the full instrumentation, context
    // switches every level that has trace sessions.
    const bool full = kLevel == spinlab::InstrumentLevel::kFull;
    const uint32_t groups = full ? spinlab::kTraceGroupSpinlock : spinlab::kTraceGroupContextSwitch;
    TraceSessionInformation bad = params(groups, spinlab::TraceLoggerMode::kRealTime);
    const uint64_t id_before = trace_query().session_id;
    bad.buffer_size = 1000;  // not a multiple of 4096
    TEST_CHECK_STATUS(trace_set(bad), Status::kInvalidParameter);
    bad = params(spinlab::kTraceGroupAll + 1, spinlab::TraceLoggerMode::kRealTime);
    TEST_CHECK_STATUS(trace_set(bad), Status::kInvalidParameter);
    bad = params(groups, spinlab::TraceLoggerMode::kRealTime);
    bad.minimum_buffers = 1000;  // far more than fit in the trace area
    bad.buffer_size = 1u << 20;
    TEST_CHECK_STATUS(trace_set(bad), Status::kInvalidParameter);
    if (!full) {  // a session that would never write a spinlock event is refused
        bad = params(spinlab::kTraceGroupSpinlock, spinlab::TraceLoggerMode::kRealTime);
        TEST_CHECK_STATUS(trace_set(bad), Status::kInvalidParameter);
    }
    TEST_CHECK(trace_query().state != uint32_t(spinlab::TraceState::kRunning));
    TEST_CHECK_EQ(trace_query().session_id, id_before);  // nothing changed
    TraceSessionInformation ok = params(groups, spinlab::TraceLoggerMode::kRealTime);
    TEST_CHECK_STATUS(trace_set(ok, false), Status::kAccessDenied);
    start(ok);
    TraceSessionInformation q = trace_query();
    TEST_CHECK_EQ(q.state, uint32_t(spinlab::TraceState::kRunning));
    TEST_CHECK_EQ(q.session_id, id_before + 1);
    TEST_CHECK_EQ(q.cpu_count, g_ncpus);
    TEST_CHECK(q.buffers_per_cpu >= 2);
    TEST_CHECK_STATUS(trace_set(ok), Status::kInvalidParameter);  // one session at a time
    stop();
    q = trace_query();
    TEST_CHECK_EQ(q.state, uint32_t(spinlab::TraceState::kStopped));
    TEST_CHECK(q.stop_tsc >= q.start_tsc);
    TEST_CHECK_EQ(q.totals.events_written + q.totals.events_lost, q.totals.events_attempted);
    // Every CPU flushed and wrote its last buffer; the stopping CPU also the configuration.
    uint64_t configs = 0;
    for (uint32_t c = 0; c < g_ncpus; c++)
        TEST_CHECK_EQ(for_each_event_on(c, [&](const spinlab::TraceEventHeader& e, const uint8_t*) {
                          configs += e.type == uint16_t(spinlab::TraceEventType::kSystemConfig);
                      }), 0);
    TEST_CHECK_EQ(configs, 1);
}

uint64_t deadline;
// Whether the test's class has had kEnoughWaits contended acquisitions, summed over the CPUs.
constexpr uint64_t kEnoughWaits = 100;
bool contended_enough() {
    uint64_t waits = 0;
    for (uint32_t c = 0; c < g_ncpus; c++) {
        const auto& k = g_lockstat_cpus[c]->classes[kClass];
        waits += __atomic_load_n(&k.acquisitions, __ATOMIC_RELAXED) - __atomic_load_n(&k.uncontended, __ATOMIC_RELAXED);
    }
    return waits >= kEnoughWaits;
}
// Start barrier: threads spawned one after another begin together. One thread per CPU, so the
// barrier spins (a yield would convoy on the scheduler lock under a fair lock and TCG).
uint32_t arrived;
int hammer_threads;
void hammer(int, void*) {
    __atomic_fetch_add(&arrived, 1, __ATOMIC_RELAXED);
    while (__atomic_load_n(&arrived, __ATOMIC_RELAXED) < uint32_t(hammer_threads) &&
           arch::rdtsc_lfence() < deadline)
        arch::pause();
    // A long critical section and none outside: the CPUs meet at the lock often. 3000 rounds,
    // and on until they have met kEnoughWaits times (a loaded host may run the vCPUs one at a
    // time for a while), up to the deadline.
    for (int k = 0; (k < 3000 || !contended_enough()) && (k < 16 || arch::rdtsc_lfence() < deadline); k++) {
        spin_lock(&lock_t);
        for (int j = 0; j < 200; j++) arch::pause();
        spin_unlock(&lock_t);
    }
}

void contended_events_equal_counters() {
    if (kLevel != spinlab::InstrumentLevel::kFull) return;  // spinlock events need full
    if (g_ncpus == 1) {  // one CPU never waits: the equality below would be 0 == 0
        kprintf("trace: contended events = counters: not checked with one CPU (nothing contends)\n");
        return;
    }
    set_spin_params(1, 1);  // every contended acquisition is an event
    spinlab::ResetRequest r{spinlab::kAllCpus, kClass};
    si::MemoryBufferState st{reinterpret_cast<uint8_t*>(&r), sizeof r};
    uint32_t ret;
    TEST_CHECK_STATUS(Status(sysinfo_set(uint32_t(InfoClass::kSpinlabResetCounters),
                                    si::memory_buffer(st), true, &ret)),
                 Status::kSuccess);
    start(params(spinlab::kTraceGroupSpinlock, spinlab::TraceLoggerMode::kRealTime));
    deadline = arch::rdtsc_lfence() + g_tsc_hz * 3;
    arrived = 0;
    hammer_threads = int(g_ncpus);
    run_on_cpus(hammer_threads, hammer, nullptr);
    stop();
    const TraceSessionInformation q = trace_query();
    TEST_CHECK_EQ(q.totals.events_lost, 0);  // else the equality below cannot be exact
    TEST_CHECK_EQ(q.totals.events_written, q.totals.events_attempted);
    uint64_t acquisitions = 0, uncontended = 0;
    for (uint32_t c = 0; c < g_ncpus; c++) {
        acquisitions += g_lockstat_cpus[c]->classes[kClass].acquisitions;
        uncontended += g_lockstat_cpus[c]->classes[kClass].uncontended;
    }
    uint64_t contended_events = 0, bad_fields = 0, other = 0;
    for (uint32_t c = 0; c < g_ncpus; c++)
        TEST_CHECK_EQ(for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
                          if (h.type != uint16_t(spinlab::TraceEventType::kSpinlock)) return;
                          spinlab::TraceSpinlockEvent e;
                          __builtin_memcpy(&e, p, sizeof e);
                          if (e.class_id != kClass) {
                              other++;
                              return;
                          }
                          if (!(e.flags & spinlab::kTraceSpinContended)) return;
                          contended_events++;
                          // Sane fields: our lock, this CPU, rule (b), a spin, a handover.
                          if (e.lock_address != uint64_t(&lock_t.core) || h.cpu != c ||
                              !(e.rules & spinlab::kTraceRuleContention) || e.spin_count < 1 ||
                              e.release_tsc < e.acquire_tsc || e.holder_cpu_end >= g_ncpus ||
                              e.call_site == 0 || h.tsc != e.release_tsc)
                              bad_fields++;
                      }), 0);
    kprintf("trace: %lu acquisitions, %lu contended, %lu contended events (%lu events of other "
            "classes), %lu written, %lu buffers\n", acquisitions, acquisitions - uncontended,
            contended_events, other, q.totals.events_written, q.totals.buffers_written);
    TEST_CHECK(acquisitions - uncontended > 0);  // else the equality below says nothing
    TEST_CHECK_EQ(contended_events, acquisitions - uncontended);
    TEST_CHECK_EQ(bad_fields, 0);
    set_spin_params(spinlab::kMinSpinThreshold, spinlab::kMinContentionSampleRate);
}

void switcher(int i, void*) {
    for (int k = 0; k < 20; k++) {
        if ((k + i) % 3 == 0) sleep_us(200);
        else yield();
    }
}

void context_switches_pair_per_cpu() {
    if (!kLocktraceBuilt) return;
    start(params(spinlab::kTraceGroupContextSwitch | spinlab::kTraceGroupReadyThread,
                 spinlab::TraceLoggerMode::kRealTime));
    run_on_cpus(int(g_ncpus) * 3, switcher, nullptr);
    stop();
    TEST_CHECK_EQ(trace_query().totals.events_lost, 0);
    uint64_t pairs = 0, unpaired = 0, readies = 0;
    for (uint32_t c = 0; c < g_ncpus; c++) {
        // Every CPU switches idle -> X -> idle: an "in" of X is followed by an "out" of X.
        bool seen_in = false, open = false;
        uint32_t open_tid = 0;
        for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
            if (h.type == uint16_t(spinlab::TraceEventType::kReadyThread)) readies++;
            if (h.type != uint16_t(spinlab::TraceEventType::kContextSwitch)) return;
            spinlab::TraceContextSwitchEvent e;
            __builtin_memcpy(&e, p, sizeof e);
            const bool in = e.old_thread_id == 0;  // from the idle thread
            if (!seen_in && !in) return;  // an "out" of a thread switched in before the start
            seen_in = true;
            if (in) {
                if (open) unpaired++;
                open = true;
                open_tid = e.new_thread_id;
            } else {
                if (!open || e.old_thread_id != open_tid || e.new_thread_id != 0) unpaired++;
                else pairs++;
                open = false;
            }
        });
    }
    kprintf("trace: %lu context switch pairs, %lu unpaired, %lu ready events\n", pairs, unpaired,
            readies);
    TEST_CHECK(pairs >= g_ncpus * 3 * 20 / 2);
    TEST_CHECK_EQ(unpaired, 0);
    TEST_CHECK(readies > 0);
}

// A process alive when the session starts is in the rundown; one started during it has a start
// (its name, the kernel as parent) and then an end with its exit code. Needs the initrd.
void processes_start_end_and_rundown() {
    if (!kLocktraceBuilt) return;
    TEST_CHECK(proc_initrd_present());
    const char* const bench[] = {"lockbench", "--threads-per-cpu", "1", "--duration-ms", "300"};
    const int64_t before = proc_spawn("/bin/lockbench", bench, 5, true, nullptr);
    TEST_CHECK(before > 0);
    start(params(spinlab::kTraceGroupProcessThread, spinlab::TraceLoggerMode::kRealTime));
    const char* const hello[] = {"hello"};
    const int64_t during = proc_spawn("/bin/hello", hello, 1, true, nullptr);
    TEST_CHECK(during > 0);
    int code = -1;
    TEST_CHECK_EQ(proc_wait(nullptr, int(during), &code), during);
    const int hello_code = code;
    TEST_CHECK_EQ(proc_wait(nullptr, int(before), &code), before);
    stop();
    TEST_CHECK_EQ(trace_query().totals.events_lost, 0);
    // The events of a process may be on different CPUs: order them by their timestamps.
    uint64_t rundown = 0, started = 0, ended = 0, before_end = 0, other = 0;
    for (uint32_t c = 0; c < g_ncpus; c++)
        for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
            const auto type = spinlab::TraceEventType(h.type);
            if (type != spinlab::TraceEventType::kProcessRundown && type != spinlab::TraceEventType::kProcessStart &&
                type != spinlab::TraceEventType::kProcessEnd)
                return;
            spinlab::TraceProcessEvent e;
            __builtin_memcpy(&e, p, sizeof e);
            const bool is_bench = e.process_id == uint32_t(before), is_hello = e.process_id == uint32_t(during);
            if (type == spinlab::TraceEventType::kProcessRundown && is_bench) {
                TEST_CHECK(__builtin_strcmp(e.name, "lockbench") == 0);
                rundown = h.tsc;
            } else if (type == spinlab::TraceEventType::kProcessStart && is_hello) {
                TEST_CHECK(__builtin_strcmp(e.name, "hello") == 0);
                TEST_CHECK_EQ(e.parent_id, 0);
                started = h.tsc;
            } else if (type == spinlab::TraceEventType::kProcessEnd && is_hello) {
                TEST_CHECK_EQ(e.exit_code, uint32_t(hello_code));
                ended = h.tsc;
            } else if (type == spinlab::TraceEventType::kProcessEnd && is_bench) {
                before_end = h.tsc;
            } else if (type != spinlab::TraceEventType::kProcessRundown) {
                other++;  // the only processes started or ended in the window are these two
            }
        });
    kprintf("trace: process rundown at %lu, hello start %lu end %lu, lockbench end %lu\n", rundown, started,
            ended, before_end);
    TEST_CHECK(rundown != 0);
    TEST_CHECK(started != 0 && ended > started);
    TEST_CHECK(before_end > rundown);
    TEST_CHECK_EQ(other, 0);
}

// A process's memory: its program's segments and its stack mapped at spawn, the counters mapped
// by lockbench (kSysMapLockstat), and one unmap of the whole user range when it is reaped, after
// its maps. Needs the initrd.
void memory_map_and_unmap_of_a_process() {
    if (!kLocktraceBuilt) return;
    TEST_CHECK(proc_initrd_present());
    start(params(spinlab::kTraceGroupMemory, spinlab::TraceLoggerMode::kRealTime));
    const char* const bench[] = {"lockbench", "--threads-per-cpu", "1", "--duration-ms", "10"};
    const int64_t pid = proc_spawn("/bin/lockbench", bench, 5, true, nullptr);
    TEST_CHECK(pid > 0);
    int code = -1;
    TEST_CHECK_EQ(proc_wait(nullptr, int(pid), &code), pid);
    TEST_CHECK_EQ(code, 0);
    stop();
    TEST_CHECK_EQ(trace_query().totals.events_lost, 0);
    uint64_t maps = 0, text = 0, stack = 0, counters = 0, unmaps = 0, last_map = 0, unmap_at = 0, other = 0;
    for (uint32_t c = 0; c < g_ncpus; c++)
        for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
            const auto type = spinlab::TraceEventType(h.type);
            if (type != spinlab::TraceEventType::kMemoryMap && type != spinlab::TraceEventType::kMemoryUnmap) return;
            spinlab::TraceMemoryEvent e;
            __builtin_memcpy(&e, p, sizeof e);
            if (e.process_id != uint32_t(pid)) {
                other++;
                return;
            }
            TEST_CHECK(e.flags & kTraceMemUser);
            TEST_CHECK(e.length > 0 && (e.length & 4095) == 0);
            if (type == spinlab::TraceEventType::kMemoryUnmap) {
                unmaps++;
                unmap_at = h.tsc;
                TEST_CHECK_EQ(e.virtual_address, spinlab::kUserBase);
                TEST_CHECK_EQ(e.virtual_address + e.length, spinlab::kUserStackTop);
                return;
            }
            maps++;
            last_map = h.tsc > last_map ? h.tsc : last_map;
            if (e.virtual_address == spinlab::kUserBase && !(e.flags & kTraceMemWritable)) text++;
            if (e.virtual_address + e.length == spinlab::kUserStackTop && (e.flags & kTraceMemWritable)) stack++;
            constexpr uint64_t kStride = (sizeof(spinlab::CpuPerfData) + 4095) & ~4095ull;  // lockstat's
            // By its address as well as its size: lockbench's data segment grew to the same
            // 16 KiB at 4 CPUs when the lock gained the preemptable ticket's fields.
            if (e.virtual_address == spinlab::kUserLockstatBase && e.length == kStride * g_ncpus &&
                (e.flags & kTraceMemWritable))
                counters++;
        });
    kprintf("trace: %lu maps of lockbench (text %lu, stack %lu, counters %lu), %lu unmaps, %lu of others\n", maps,
            text, stack, counters, unmaps, other);
    TEST_CHECK_EQ(text, 1);
    TEST_CHECK_EQ(stack, 1);
    TEST_CHECK_EQ(counters, 1);
    TEST_CHECK_EQ(unmaps, 1);
    TEST_CHECK(unmap_at > last_map);
}

// The user-mode logger: usertest writes N spinlock records through its thread's ring (class id
// = the record's number), the kernel takes them into the CPUs' streams (on request when the
// ring is full, and at the thread's exit), refuses two scribbled ones; every record is in the
// trace exactly once, with the kernel's header, in order, and the refusals are counted lost.
// Unprivileged, the ring is refused. Needs the initrd.
void user_ring_records_reach_the_cpu_streams() {
    if (kLevel != spinlab::InstrumentLevel::kFull) return;  // the spinlock group needs full
    TEST_CHECK(proc_initrd_present());
    constexpr uint32_t kN = 3000;
    start(params(spinlab::kTraceGroupSpinlock, spinlab::TraceLoggerMode::kRealTime));
    const char* const argv[] = {"usertest", "ring", "3000"};
    const int64_t pid = proc_spawn("/bin/usertest", argv, 3, true, nullptr);
    TEST_CHECK(pid > 0);
    int code = -1;
    TEST_CHECK_EQ(proc_wait(nullptr, int(pid), &code), pid);
    TEST_CHECK_EQ(code, 0);
    stop();
    static uint8_t seen[kN];
    __builtin_memset(seen, 0, sizeof seen);
    uint64_t mine = 0, bad = 0, last_tsc = 0, out_of_order = 0;
    uint32_t tid = 0;
    for (uint32_t c = 0; c < g_ncpus; c++, last_tsc = 0)
        for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
            if (h.type != uint16_t(spinlab::TraceEventType::kSpinlock) || h.process_id != uint32_t(pid)) return;
            spinlab::TraceSpinlockEvent e;
            __builtin_memcpy(&e, p, sizeof e);
            // Kernel locks released in usertest's system calls may be sampled too: theirs are
            // the kernel's addresses, the ring's records name a lock on usertest's stack.
            if (e.lock_address < spinlab::kUserBase) return;
            mine++;
            if (e.class_id >= kN || e.rules != spinlab::kTraceRuleAcquireSample || h.cpu != c || h.thread_id == 0 ||
                (tid != 0 && h.thread_id != tid))
                bad++;
            else
                seen[e.class_id]++;
            tid = h.thread_id;
            // One thread: on each CPU, its records are in the order it wrote them.
            if (h.tsc < last_tsc) out_of_order++;
            last_tsc = h.tsc;
        });
    uint32_t once = 0;
    for (uint32_t i = 0; i < kN; i++) once += seen[i] == 1;
    const auto s = trace_query();
    kprintf("trace: user ring: %lu records of usertest in the trace (%u of %u once), %lu bad; %lu lost\n", mine,
            once, kN, bad, s.totals.events_lost);
    TEST_CHECK_EQ(mine, kN);
    TEST_CHECK_EQ(once, kN);
    TEST_CHECK_EQ(bad, 0);
    TEST_CHECK_EQ(out_of_order, 0);
    TEST_CHECK_EQ(s.totals.events_lost, 2);  // the two refused records
    TEST_CHECK_EQ(s.totals.events_written + s.totals.events_lost, s.totals.events_attempted);
    // Unprivileged: refused (usertest checks -EPERM itself).
    const char* const unpriv[] = {"usertest", "ring-unpriv"};
    const int64_t up = proc_spawn("/bin/usertest", unpriv, 2, false, nullptr);
    TEST_CHECK(up > 0);
    TEST_CHECK_EQ(proc_wait(nullptr, int(up), &code), up);
    TEST_CHECK_EQ(code, 0);
}

// A process that scribbles on its own ring (usertest ring-scribble: records, garbage, leaps of
// head and full, a second thread writing random bytes over the ring) beside lockbench, whose
// rings are left alone: every buffer the CPUs published is whole, every event of the scribbler
// that reached a stream is a well-formed spinlock event with the kernel's header, stamped inside
// the session, lockbench's events are there, and the accounting holds. Needs the initrd.
// Every CPU's stream is in time order (a ring record's header stamp never goes back).
void a_process_scribbling_its_ring_loses_only_its_own_events() {
    if (kLevel != spinlab::InstrumentLevel::kFull) return;
    TEST_CHECK(proc_initrd_present());
    start(params(spinlab::kTraceGroupSpinlock, spinlab::TraceLoggerMode::kRealTime));
    const uint64_t started = trace_query().start_tsc;
    const char* const bench[] = {"lockbench", "--threads-per-cpu", "1", "--duration-ms", "400"};
    const char* const scribble[] = {"usertest", "ring-scribble", "400"};
    const int64_t lb = proc_spawn("/bin/lockbench", bench, 5, true, nullptr);
    const int64_t sc = proc_spawn("/bin/usertest", scribble, 3, true, nullptr);
    TEST_CHECK(lb > 0 && sc > 0);
    int code = -1;
    TEST_CHECK_EQ(proc_wait(nullptr, int(sc), &code), sc);
    TEST_CHECK_EQ(code, 0);
    TEST_CHECK_EQ(proc_wait(nullptr, int(lb), &code), lb);
    TEST_CHECK_EQ(code, 0);
    stop();
    const auto s = trace_query();
    uint64_t theirs = 0, bad = 0, bench_events = 0, unparsed = 0, backwards = 0;
    for (uint32_t c = 0; c < g_ncpus; c++) {
        uint64_t last = 0;
        unparsed += for_each_event_on(c, [&](const spinlab::TraceEventHeader& e, const uint8_t* p) {
            if (e.tsc < last) backwards++;  // the CPU's stream in time order
            last = e.tsc;
            if (e.process_id == uint32_t(lb)) bench_events++;
            if (e.process_id != uint32_t(sc)) return;
            theirs++;
            spinlab::TraceSpinlockEvent ev;
            __builtin_memcpy(&ev, p, sizeof ev);
            if (e.type != uint16_t(spinlab::TraceEventType::kSpinlock) || e.size != sizeof ev || e.thread_id == 0 ||
                ev.rules == 0 || e.tsc < started || e.tsc > s.stop_tsc || ev.release_tsc > e.tsc)
                bad++;
        });
    }
    kprintf("trace: ring scribbler: %lu of its events in the streams, %lu bad, %lu buffers refused, %lu stamps "
            "back in time; lockbench %lu events; %lu written, %lu lost\n",
            theirs, bad, unparsed, backwards, bench_events, s.totals.events_written, s.totals.events_lost);
    TEST_CHECK(theirs > 0);
    TEST_CHECK_EQ(bad, 0);
    TEST_CHECK_EQ(unparsed, 0);
    TEST_CHECK_EQ(backwards, 0);
    TEST_CHECK(bench_events > 0);
    TEST_CHECK_EQ(s.totals.events_written + s.totals.events_lost, s.totals.events_attempted);
}

void circular_keeps_the_newest() {
    if (!kLocktraceBuilt) return;
    TraceSessionInformation s = params(spinlab::kTraceGroupSyscall, spinlab::TraceLoggerMode::kCircular);
    s.buffer_size = 4096;
    s.minimum_buffers = 2;
    s.maximum_buffers = 4;
    thread_set_affinity(0);
    start(s);
    constexpr uint64_t kEvents = 1000;  // 56-byte events, ~71 per buffer: ~14 buffers
    for (uint64_t i = 0; i < kEvents; i++) locktrace_syscall_enter(1000000 + i, i, 0, 0);
    stop();
    thread_set_affinity(kAnyCpu);
    const TraceSessionInformation q = trace_query();
    TEST_CHECK_EQ(q.buffers_per_cpu, 4);
    TEST_CHECK_EQ(q.totals.events_lost, 0);
    TEST_CHECK(q.totals.log_buffers_lost >= 8);
    uint64_t first = ~0ull, last = 0, n = 0, gaps = 0;
    for_each_event_on(0, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
        if (h.type != uint16_t(spinlab::TraceEventType::kSyscallEnter)) return;
        spinlab::TraceSyscallEnterEvent e;
        __builtin_memcpy(&e, p, sizeof e);
        if (e.number < 1000000) return;
        const uint64_t v = e.number - 1000000;
        if (n && v != last + 1) gaps++;
        if (first == ~0ull) first = v;
        last = v;
        n++;
    });
    kprintf("trace: circular kept events %lu..%lu of 0..%lu\n", first, last, kEvents - 1);
    TEST_CHECK_EQ(last, kEvents - 1);  // the newest survives
    TEST_CHECK(first > 0);             // the oldest went
    TEST_CHECK(n >= 3 * ((4096 - 64) / sizeof(spinlab::TraceSyscallEnterEvent)));
    TEST_CHECK_EQ(gaps, 0);
}

// --- call stacks ------------------------------------------------------------------------------

Status stacks_set(spinlab::TraceStackInformation& s) {
    s.event_trace_information_class = spinlab::kSpinlabTraceStacks;
    si::MemoryBufferState st{reinterpret_cast<uint8_t*>(&s), sizeof s};
    uint32_t r;
    return Status(sysinfo_set(uint32_t(InfoClass::kSystemPerformanceTraceInformation),
                              si::memory_buffer(st), true, &r));
}

spinlab::TraceStackInformation stacks_query() {
    spinlab::TraceStackInformation s{};
    s.event_trace_information_class = spinlab::kSpinlabTraceStacks;
    si::MemoryBufferState st{reinterpret_cast<uint8_t*>(&s), sizeof s};
    uint32_t r;
    const Status q = Status(sysinfo_query(uint32_t(InfoClass::kSystemPerformanceTraceInformation),
                                          si::memory_buffer(st), &r));
    if (q != Status::kSuccess) selftest_fail(__FILE__, __LINE__, "stacks query: %s", spinlab::status_name(q));
    return s;
}

// A known call chain: outer -> middle -> inner, which holds lock_t past the hold threshold (an
// event at its release). Each records where it returns to in its caller: the stack of that
// event must hold those return addresses, in this order, after inner's own frames.
uint64_t ret_into_middle, ret_into_outer;
__attribute__((noinline)) void stack_chain_inner() {
    ret_into_middle = uint64_t(__builtin_return_address(0));
    spin_lock(&lock_t);
    const uint64_t until = arch::rdtsc_lfence() + 2 * spinlab::kMinHoldThreshold;
    while (arch::rdtsc_lfence() < until) arch::pause();
    spin_unlock(&lock_t);
    asm volatile("" ::: "memory");  // no tail call: this frame stays on the stack
}
__attribute__((noinline)) void stack_chain_middle() {
    ret_into_outer = uint64_t(__builtin_return_address(0));
    stack_chain_inner();
    asm volatile("" ::: "memory");
}
__attribute__((noinline)) void stack_chain_outer(int, void*) {
    stack_chain_middle();
    asm volatile("" ::: "memory");
}

void stacks_on_spinlock_events_hold_the_known_chain() {
    if (!kLocktraceBuilt) return;
    // Validation: a refused setting names nothing new and changes nothing.
    spinlab::TraceStackInformation s = lt::default_stack_settings();
    const spinlab::TraceStackInformation before = stacks_query();
    s.stack_flags = spinlab::kTraceGroupProcessThread;  // no stacks on process events
    TEST_CHECK_STATUS(stacks_set(s), Status::kInvalidParameter);
    s = lt::default_stack_settings();
    s.max_depth = spinlab::kTraceMaxStackFrames + 1;
    TEST_CHECK_STATUS(stacks_set(s), Status::kInvalidParameter);
    TEST_CHECK_EQ(stacks_query().stack_flags, before.stack_flags);
    TEST_CHECK_EQ(stacks_query().max_depth, before.max_depth);
    // Clamped, not refused.
    s = lt::default_stack_settings();
    s.bucket_count = 4097;
    s.cache_size = 1;
    TEST_CHECK_STATUS(stacks_set(s), Status::kSuccess);
    TEST_CHECK_EQ(stacks_query().bucket_count, spinlab::kTraceMaxBucketCount);
    TEST_CHECK_EQ(stacks_query().cache_size, spinlab::kTraceMinStackCacheSize);
    if (kLevel != spinlab::InstrumentLevel::kFull) return;  // spinlock events need full

    s = lt::default_stack_settings();
    s.stack_flags = spinlab::kTraceGroupSpinlock;
    s.bucket_count = 255;
    TEST_CHECK_STATUS(stacks_set(s), Status::kSuccess);
    set_spin_params(1, 1);
    start(params(spinlab::kTraceGroupSpinlock, spinlab::TraceLoggerMode::kRealTime));
    TEST_CHECK_STATUS(stacks_set(s), Status::kInvalidParameter);  // not while a session runs
    TEST_CHECK_EQ(stacks_query().bucket_count, 256u);
    run_on_cpus(1, stack_chain_outer, nullptr);
    run_on_cpus(1, stack_chain_outer, nullptr);  // the same stack again: a hit
    stop();
    TEST_CHECK_EQ(trace_query().totals.events_lost, 0);
    // The chain's events: a hold event of lock_t, then its stack (definition + reference). Only
    // the stacks lock_t's hold events reference are the chain's: another event written while the
    // chain ran (a kernel lock an interrupt held past the threshold, when the host preempted the
    // vCPU inside it: seen at 4 vCPUs under TCG on a busy host) has the chain's frames below the
    // interrupt's, under a key of its own.
    struct Definition {
        uint64_t key;
        bool chain, bad_end;
    };
    static Definition definitions[64];
    uint32_t ndefs_kept = 0;
    uint64_t refs = 0, defs = 0, rundowns = 0, counters = 0;
    uint64_t pending_tsc = 0, chain_refs = 0, chain_key = 0, other_keys = 0;
    for (uint32_t c = 0; c < g_ncpus; c++)
        TEST_CHECK_EQ(for_each_event_on(c, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
                          using T = spinlab::TraceEventType;
                          if (h.type == uint16_t(T::kSpinlock)) {
                              spinlab::TraceSpinlockEvent e;
                              __builtin_memcpy(&e, p, sizeof e);
                              pending_tsc = e.lock_address == uint64_t(&lock_t.core) &&
                                                    (e.rules & spinlab::kTraceRuleHold) ? h.tsc : 0;
                              return;
                          }
                          if (h.type == uint16_t(T::kStackCacheCounters)) counters++;
                          if (!spinlab::trace_event_has_frames(h.type)) return;
                          spinlab::TraceStackEvent e;
                          __builtin_memcpy(&e, p, sizeof e);
                          const uint64_t* f = reinterpret_cast<const uint64_t*>(p + sizeof e);
                          if (h.type == uint16_t(T::kStackRundown)) rundowns++;
                          if (h.type == uint16_t(T::kStackReference)) {
                              refs++;
                              if (pending_tsc && e.event_tsc == pending_tsc) {
                                  if (chain_refs++ == 0) chain_key = e.key;
                                  other_keys += e.key != chain_key;
                              }
                          }
                          if (h.type != uint16_t(T::kStackDefinition)) return;
                          defs++;
                          Definition d{e.key, false, false};
                          for (uint32_t i = 1; i + 1 < e.nframes; i++)
                              if (f[i] == ret_into_middle && f[i + 1] == ret_into_outer) {
                                  d.chain = true;
                                  d.bad_end = e.walk_end != uint8_t(spinlab::TraceStackEnd::kEnd) ||
                                              e.user_end != uint8_t(spinlab::TraceStackEnd::kNone);
                              }
                          if (ndefs_kept < 64) definitions[ndefs_kept++] = d;
                      }),
                      0);
    uint64_t chain_defs = 0, chain_bad_end = 0, chain_frames = 0, others_with_chain = 0;
    for (uint32_t i = 0; i < ndefs_kept; i++) {
        const Definition& d = definitions[i];
        if (d.key != chain_key) {
            others_with_chain += d.chain;
            continue;
        }
        chain_defs++;
        chain_frames += d.chain;
        chain_bad_end += d.bad_end;
    }
    kprintf("trace: stacks: %lu definitions, %lu references, %lu rundowns, chain referenced %lu times, "
            "%lu other stacks through the chain\n", defs, refs, rundowns, chain_refs, others_with_chain);
    TEST_CHECK(ndefs_kept == defs);  // every definition looked at
    TEST_CHECK_EQ(chain_refs, 2);    // referenced by both hold events
    TEST_CHECK_EQ(other_keys, 0);    // the same stack both times: one key
    TEST_CHECK_EQ(chain_defs, 1);    // defined once (both runs on CPU 0: one cache)
    TEST_CHECK_EQ(chain_frames, 1);  // its frames are the chain's
    TEST_CHECK_EQ(chain_bad_end, 0); // a kernel thread's walk ends at its first frame
    TEST_CHECK(refs >= 2);
    TEST_CHECK_EQ(counters, g_ncpus);
    const spinlab::TraceStackInformation q = stacks_query();
    TEST_CHECK_EQ(q.definitions_written, defs);
    TEST_CHECK_EQ(q.rundowns_written, rundowns);
    TEST_CHECK(rundowns >= 1);
    TEST_CHECK(q.hits >= 1);
    s = lt::default_stack_settings();  // leave stacks off for the other tests
    TEST_CHECK_STATUS(stacks_set(s), Status::kSuccess);
}

const SelfTest kTests[] = {
    {"control_through_sysinfo", control_through_sysinfo},
    {"contended_events_equal_counters", contended_events_equal_counters},
    {"context_switches_pair_per_cpu", context_switches_pair_per_cpu},
    {"processes_start_end_and_rundown", processes_start_end_and_rundown},
    {"memory_map_and_unmap_of_a_process", memory_map_and_unmap_of_a_process},
    {"user_ring_records_reach_the_cpu_streams", user_ring_records_reach_the_cpu_streams},
    {"a_process_scribbling_its_ring_loses_only_its_own_events", a_process_scribbling_its_ring_loses_only_its_own_events},
    {"circular_keeps_the_newest", circular_keeps_the_newest},
    {"stacks_on_spinlock_events_hold_the_known_chain", stacks_on_spinlock_events_hold_the_known_chain},
};

}  // namespace

extern const SelfTestSuite kSuiteTrace = {"trace", kTests, sizeof kTests / sizeof kTests[0]};
