// selftest/trace_modes_test.cc: the logger modes and buffers of a trace session in the running
// kernel (spinlab/trace.h): blocking mode (no-drop-stall) waits for a buffer with interrupts on
// and drops with interrupts off, buffers grow on demand from MinimumBuffers to MaximumBuffers,
// and a flush publishes every CPU's partly filled buffer while the session keeps running (what
// a circular session's snapshot reads). A guest thread plays the host: it drains the trace area
// with locktrace/drain.h, as the collector does.
//
// The events are system call events written by the test itself (locktrace_syscall_enter with
// numbers from kMark up), so other activity in the kernel cannot change the counts.
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include "../arch/x86.h"
#include "../kern/console.h"
#include "../kern/lapic.h"
#include "../kern/locktrace.h"
#include "../kern/prcb.h"
#include "../kern/sched.h"
#include "../kern/selftest.h"
#include "../kern/sysinfo_glue.h"
#include "../locktrace/buffer_parser.h"
#include "../locktrace/drain.h"
#include "../locktrace/trace_session.h"
#include "../sysinfo/memory_buffer.h"
#include "trace_calls.h"

namespace {

using spinlab::InfoClass;
using spinlab::Status;
using spinlab::TraceLoggerMode;
using spinlab::TraceSessionInformation;
namespace si = spinlab::sysinfo;
namespace lt = spinlab::locktrace;

constexpr uint64_t kMark = 3000000;  // system call numbers of the test's own events
constexpr uint32_t kEventSize = sizeof(spinlab::TraceSyscallEnterEvent);       // 56 bytes
constexpr uint32_t kPerBuffer = (4096 - sizeof(spinlab::TraceBufferHeader)) / kEventSize;  // 72

using selftest_trace::trace_query;
using selftest_trace::trace_set;

// A session of the syscall group only, 4 KiB buffers, no FlushTimer.
void start(TraceLoggerMode mode, uint32_t min_buffers, uint32_t max_buffers) {
    TraceSessionInformation s = lt::default_session_params();
    s.command = uint32_t(spinlab::TraceCommand::kStart);
    s.enable_flags = spinlab::kTraceGroupSyscall;
    s.logger_mode = uint32_t(mode);
    s.buffer_size = 4096;
    s.minimum_buffers = min_buffers;
    s.maximum_buffers = max_buffers;
    s.flush_timer_ms = 0;
    TEST_CHECK_STATUS(trace_set(s), Status::kSuccess);
}

void command(spinlab::TraceCommand c) {
    TraceSessionInformation s{};
    s.event_trace_information_class = spinlab::kSpinlabTraceSession;
    s.command = uint32_t(c);
    TEST_CHECK_STATUS(trace_set(s), Status::kSuccess);
}

// The area's checked header (the host's view), or a failure.
bool area_header(spinlab::TraceAreaHeader* h) {
    const char* why = lt::area_parse(locktrace_area(), locktrace_area_size(), h);
    if (why) selftest_fail(__FILE__, __LINE__, "trace area: %s", why);
    return why == nullptr;
}

// What a drain saw of the test's events: how many, and whether they came in order.
struct Seen {
    uint64_t events = 0;
    uint64_t next = 0;       // the number expected next
    uint64_t out_of_order = 0;
    void add(const uint8_t* data, uint32_t len) {
        lt::BufferView v;
        if (lt::parse_buffer(data, len, &v) != lt::BufferError::kNone) {
            out_of_order++;
            return;
        }
        lt::for_each_event(v, [&](const spinlab::TraceEventHeader& h, const uint8_t* p) {
            if (h.type != uint16_t(spinlab::TraceEventType::kSyscallEnter)) return;
            spinlab::TraceSyscallEnterEvent e;
            __builtin_memcpy(&e, p, sizeof e);
            if (e.number < kMark) return;
            if (e.number - kMark != next) out_of_order++;
            next = e.number - kMark + 1;
            events++;
        });
    }
};

uint8_t copy[4096];  // one 4 KiB buffer; the tests run one at a time

// Takes every queued buffer of CPU `cpu` (real-time protocol) into `seen`. Returns how many.
uint64_t drain_cpu(uint32_t cpu, Seen& seen) {
    spinlab::TraceAreaHeader h;
    if (!area_header(&h)) return 0;
    uint64_t n = 0;
    uint32_t len;
    for (;;) {
        const lt::TakeResult r = lt::take_buffer(const_cast<void*>(locktrace_area()), h, cpu, copy, &len);
        if (r == lt::TakeResult::kEmpty) return n;
        TEST_CHECK_EQ(uint32_t(r), uint32_t(lt::TakeResult::kTaken));
        if (r != lt::TakeResult::kTaken) return n;
        seen.add(copy, len);
        n++;
    }
}

uint64_t cpu_allocated(uint32_t cpu) {
    spinlab::TraceAreaHeader h;
    return area_header(&h) ? lt::cpu_buffers_allocated(locktrace_area(), h, cpu) : 0;
}

const spinlab::TraceCpuControl& control(uint32_t cpu) {
    return *lt::area_control(const_cast<void*>(locktrace_area()), cpu);
}

// --- blocking mode ----------------------------------------------------------------------------

// The host of the blocking test: drains CPU 0 until the writer is done and nothing is left.
volatile bool writer_done;
Seen drained;
void drainer(void*) {
    for (;;) {
        const bool done = __atomic_load_n(&writer_done, __ATOMIC_ACQUIRE);
        if (drain_cpu(0, drained) == 0) {
            if (done) return;
            sleep_us(2000);  // a slow host: the writer fills both buffers and waits
        }
    }
}

// Interrupts on: every event waits for a buffer (none lost, in order, `stalls` counts the
// waits); nothing grows (MinimumBuffers = MaximumBuffers = 2). The writer is a kernel thread on
// CPU 0 that may be preempted while it waits, so the drainer runs even with one vCPU.
void no_drop_stall_waits_with_interrupts_on() {
    if (!kLocktraceBuilt) return;
    constexpr uint64_t kEvents = 8 * kPerBuffer;  // 8 buffers through 2 slots
    thread_set_affinity(0);
    start(TraceLoggerMode::kNoDropStall, 2, 2);
    writer_done = false;
    drained = Seen{};
    Thread* d = thread_spawn("drainer", drainer, nullptr, 0);
    TEST_CHECK(d != nullptr);
    TEST_CHECK(arch::irqs_enabled());
    for (uint64_t i = 0; i < kEvents; i++) locktrace_syscall_enter(kMark + i, i, 0, 0);
    // Let the drainer catch up, so that the stop's configuration event (which never waits:
    // the stop command writes it) finds a free buffer.
    const uint64_t give_up = arch::rdtsc_lfence() + 5 * g_tsc_hz;
    while (__atomic_load_n(&control(0).consumed, __ATOMIC_ACQUIRE) <
               __atomic_load_n(&control(0).produced, __ATOMIC_ACQUIRE) &&
           arch::rdtsc_lfence() < give_up)
        sleep_us(1000);
    command(spinlab::TraceCommand::kStop);  // publishes the last partly filled buffer
    __atomic_store_n(&writer_done, true, __ATOMIC_RELEASE);
    thread_join(d);
    thread_set_affinity(kAnyCpu);
    const spinlab::TraceCpuControl& k = control(0);
    kprintf("trace_modes: no-drop-stall, interrupts on: %lu of %lu events drained, %lu lost, "
            "%lu stalls, %lu buffers\n", drained.events, kEvents, k.events_lost, k.stalls,
            k.buffers_written);
    TEST_CHECK_EQ(k.events_lost, 0);
    TEST_CHECK_EQ(drained.events, kEvents);
    TEST_CHECK_EQ(drained.out_of_order, 0);
    TEST_CHECK(k.stalls >= 1);  // the drainer sleeps: the writer had to wait
    TEST_CHECK_EQ(k.events_written, k.events_attempted);
    TEST_CHECK_EQ(cpu_allocated(0), 2);
}

// Interrupts off: the event is dropped and counted at once, never a stall. Nobody drains.
void no_drop_stall_drops_with_interrupts_off() {
    if (!kLocktraceBuilt) return;
    constexpr uint64_t kEvents = 4 * kPerBuffer;  // 2 buffers' worth fit, the rest is lost
    thread_set_affinity(0);
    start(TraceLoggerMode::kNoDropStall, 2, 2);
    const uint64_t t0 = arch::rdtsc_lfence();
    const uint64_t f = irq_save();
    for (uint64_t i = 0; i < kEvents; i++) locktrace_syscall_enter(kMark + i, i, 0, 0);
    irq_restore(f);
    const uint64_t us = (arch::rdtsc_lfence() - t0) * 1000000 / g_tsc_hz;
    const spinlab::TraceCpuControl& k = control(0);
    const uint64_t lost = k.events_lost, written = k.events_written, stalls = k.stalls;
    command(spinlab::TraceCommand::kStop);
    thread_set_affinity(kAnyCpu);
    Seen seen;
    drain_cpu(0, seen);
    kprintf("trace_modes: no-drop-stall, interrupts off: %lu written, %lu lost, %lu stalls in %lu us\n",
            written, lost, stalls, us);
    TEST_CHECK_EQ(stalls, 0);
    TEST_CHECK_EQ(written, 2 * kPerBuffer);  // both slots filled, then nothing more
    TEST_CHECK_EQ(lost, kEvents - 2 * kPerBuffer);
    TEST_CHECK_EQ(seen.events, 2 * kPerBuffer);
    TEST_CHECK_EQ(seen.out_of_order, 0);
    // No waiting: a loss costs a few hundred cycles, even under TCG far below a second each.
    TEST_CHECK(us < 500000);
}

// --- buffers grow on demand -------------------------------------------------------------------

// Real-time, MinimumBuffers 2, MaximumBuffers 6, nobody draining: CPU 0 takes a third slot only
// when its two are full, then one more per buffer, up to 6; then events are lost. The other
// CPUs wrote nothing and keep 2. After a drain the buffers rotate through the same 6 slots.
void buffers_grow_on_demand() {
    if (!kLocktraceBuilt) return;
    constexpr uint64_t P = kPerBuffer;
    thread_set_affinity(0);
    start(TraceLoggerMode::kRealTime, 2, 6);
    TEST_CHECK_EQ(trace_query().buffers_per_cpu, 6);
    uint64_t i = 0;
    auto write = [&](uint64_t n) {
        for (uint64_t end = i + n; i < end; i++) locktrace_syscall_enter(kMark + i, i, 0, 0);
    };
    write(2 * P);  // fills buffers 0 and 1 (slots 0 and 1) exactly
    TEST_CHECK_EQ(cpu_allocated(0), 2);
    write(1);  // buffer 2 needs a slot while 0 and 1 are queued: the first growth
    TEST_CHECK_EQ(cpu_allocated(0), 3);
    write(3 * P);  // buffers 3, 4, 5
    TEST_CHECK_EQ(cpu_allocated(0), 6);
    TEST_CHECK_EQ(control(0).events_lost, 0);
    write(P + 4);  // buffer 5 fills (it held one); then all 6 are queued, none can grow: 5 lost
    TEST_CHECK_EQ(cpu_allocated(0), 6);
    TEST_CHECK_EQ(control(0).events_lost, 5);
    TEST_CHECK_EQ(trace_query().number_of_buffers, 6 + 2 * (g_ncpus - 1));
    for (uint32_t c = 1; c < g_ncpus; c++) TEST_CHECK_EQ(cpu_allocated(c), 2);
    // The host takes the 6 queued buffers, in order.
    Seen seen;
    TEST_CHECK_EQ(drain_cpu(0, seen), 6);
    TEST_CHECK_EQ(seen.events, 6 * P);
    TEST_CHECK_EQ(seen.out_of_order, 0);
    // Rotation: 12 more buffers through the same 6 slots, drained as they come.
    for (int round = 0; round < 12; round++) {
        write(P);
        drain_cpu(0, seen);
    }
    command(spinlab::TraceCommand::kStop);
    drain_cpu(0, seen);
    thread_set_affinity(kAnyCpu);
    kprintf("trace_modes: growth: cpu 0 allocated %lu of 6, %lu events drained, %lu lost\n",
            cpu_allocated(0), seen.events, control(0).events_lost);
    TEST_CHECK_EQ(cpu_allocated(0), 6);  // never shrinks within a session
    TEST_CHECK_EQ(control(0).events_lost, 5);  // drained in time: nothing more lost
    TEST_CHECK_EQ(seen.events, 18 * P);
    TEST_CHECK_EQ(seen.out_of_order, 1);  // the one gap: the 5 events lost while all 6 were full
}

// --- flush ------------------------------------------------------------------------------------

void write_three(int i, void*) {
    for (uint64_t k = 0; k < 3; k++) locktrace_syscall_enter(kMark + 10 * uint64_t(i) + k, k, 0, 0);
}

// A circular session's snapshot: after a flush every CPU's events are in published buffers
// (each CPU publishes its partly filled one on its next tick; the command waits for them) and
// the session still runs. Read in place, as `spinlab-collect trace flush` does.
void flush_publishes_every_cpu() {
    if (!kLocktraceBuilt) return;
    start(TraceLoggerMode::kCircular, 2, 4);
    run_on_cpus(int(g_ncpus), write_three, nullptr);  // thread i on CPU i
    command(spinlab::TraceCommand::kFlush);
    TEST_CHECK_EQ(trace_query().state, uint32_t(spinlab::TraceState::kRunning));
    spinlab::TraceAreaHeader h;
    uint64_t found = 0, cpus_with_all = 0;
    if (area_header(&h)) {
        for (uint32_t c = 0; c < g_ncpus; c++) {
            struct Count {
                uint32_t cpu;
                uint64_t n;
            } count{c, 0};
            const uint64_t torn = lt::read_in_place(
                locktrace_area(), h, c, copy,
                [](void* arg, const uint8_t* data, uint32_t len) {
                    Count& k = *static_cast<Count*>(arg);
                    lt::BufferView v;
                    if (lt::parse_buffer(data, len, &v) != lt::BufferError::kNone) return;
                    lt::for_each_event(v, [&](const spinlab::TraceEventHeader& e, const uint8_t* p) {
                        if (e.type != uint16_t(spinlab::TraceEventType::kSyscallEnter)) return;
                        spinlab::TraceSyscallEnterEvent ev;
                        __builtin_memcpy(&ev, p, sizeof ev);
                        if (ev.number >= kMark + 10 * k.cpu && ev.number < kMark + 10 * k.cpu + 3) k.n++;
                    });
                },
                &count);
            TEST_CHECK_EQ(torn, 0);
            found += count.n;
            cpus_with_all += count.n == 3;
        }
    }
    command(spinlab::TraceCommand::kStop);
    kprintf("trace_modes: flush: %lu of %u events published, %lu of %u CPUs complete\n", found,
            3 * g_ncpus, cpus_with_all, g_ncpus);
    TEST_CHECK_EQ(found, 3 * g_ncpus);
    TEST_CHECK_EQ(cpus_with_all, g_ncpus);
}

const SelfTest kTests[] = {
    {"no_drop_stall_waits_with_interrupts_on", no_drop_stall_waits_with_interrupts_on},
    {"no_drop_stall_drops_with_interrupts_off", no_drop_stall_drops_with_interrupts_off},
    {"buffers_grow_on_demand", buffers_grow_on_demand},
    {"flush_publishes_every_cpu", flush_publishes_every_cpu},
};

}  // namespace

extern const SelfTestSuite kSuiteTraceModes = {"trace_modes", kTests, sizeof kTests / sizeof kTests[0]};
