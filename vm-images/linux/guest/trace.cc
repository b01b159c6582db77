// vm-images/linux/guest/trace.cc: see trace.h. The session logic of spinlab's kernel
// (kern/locktrace.cc: start, stop, flush_all, locktrace_query, the tick's arming and disarming)
// with its writer and area code (locktrace/writer.cc, trace_session.cc), for threads instead of
// CPUs: CPU n's reader thread is the kernel's CPU n (the one writer of its buffers, ticking at
// each loop turn, at least every 20 ms), the control channel's thread is the CPU that runs the
// command. They share only the published words (`pub`, each CPU's session_id, groups and
// flushes_done), as in the kernel.
//
// What differs from the kernel, because a reader thread sees a CPU's waits some time after they
// ended (it reads the CPU's trace_pipe every 20 ms at most, and behind a backlog under load):
// - the session's window is exact in the waits' own stamps: a wait is written iff its end lies
//   in [start_tsc, stop_tsc], whenever its reader reads it. A reader keeps the long waits it read
//   while unarmed (up to kHistory) and writes those that ended at or after start_tsc when it
//   arms; at a stop it disarms only once it has read everything its CPU stamped before stop_tsc
//   (an event stamped later read, or its pipe found empty by a read that began after it saw the
//   stop: the reader runs on its CPU, so that CPU committed every event it stamped before);
// - stop_tsc is the stop command's time (not the time the last CPU disarmed), and the system
//   configuration event is written by CPU 0's reader when it disarms, stamped stop_tsc (the
//   channel's thread has no writer of its own and never writes on another CPU's);
// - no-drop-stall mode: a reader waits (1 ms sleeps) for a free buffer, which only delays its
//   reading of the pipe (the kernel's waiting CPU would be spinning with the lock's waiters).
#include "trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#include <type_traits>

#include <spinlab/shm.h>

#include "locktrace/trace_session.h"
#include "locktrace/writer.h"
#include "region.h"

namespace {

namespace lt = spinlab::locktrace;
using spinlab::Status;
using spinlab::TraceState;

constexpr uint32_t kServed = spinlab::kTraceGroupLongWait;  // what a Linux guest can write
constexpr uint32_t kHistory = 512;    // long waits kept per CPU while unarmed
constexpr uint32_t kConfigCpu = 0;    // its reader writes the system configuration at a stop

struct Wait {
    uint64_t lock, start, end;
};

struct Cpu {
    // The reader thread's own.
    lt::Writer writer;
    uint64_t local_id = 0;     // the session armed (or last armed) here
    uint64_t session_start = 0;
    bool armed = false;
    bool stop_seen = false;    // it saw the stop at an earlier tick
    Wait* history = nullptr;   // kHistory long waits read while unarmed (a ring)
    uint64_t history_n = 0;
    // Published to the channel's thread.
    uint64_t session_id = 0;   // id when armed; id | 1 << 63 once disarmed ("done")
    uint32_t groups = 0;       // nonzero while armed
    uint32_t alive = 0;        // 1: its reader ticks; 2: its reader has exited
    uint64_t flushes_done = 0;
};

Cpu cpus[spinlab::kRegionMaxCpus];
uint32_t ncpus;
uint8_t* area;
uint64_t area_size;
const spinlab::SystemConfiguration* config;

// The session as the readers see it. Written by the channel's thread; `state` last on a start
// (release), `stopping` after stop_tsc on a stop (release).
struct Published {
    uint64_t id;
    uint32_t state;
    uint32_t stopping;
    uint64_t stop_tsc;
    uint64_t flush_cycles;
    uint64_t flush_requests;
} pub;

spinlab::TraceSessionInformation last;  // the current or last session's parameters

uint64_t now() {
    _mm_lfence();
    return __rdtsc();
}

template <class T>
T load(const T& v, int order = __ATOMIC_RELAXED) {
    return __atomic_load_n(&v, order);
}
template <class T>
void store(T& v, std::type_identity_t<T> x, int order = __ATOMIC_RELAXED) {
    __atomic_store_n(&v, x, order);
}

void write_system_config(Cpu& c, uint32_t cpu, uint64_t tsc) {
    constexpr uint32_t size = sizeof(spinlab::TraceSystemConfigEvent);
    auto* e = static_cast<spinlab::TraceSystemConfigEvent*>(lt::begin_write(c.writer, size, false));
    if (!e) return;  // lost, counted
    lt::fill_header(e->h, size, spinlab::TraceEventType::kSystemConfig, cpu, 0, 0, tsc);
    e->cpu_count = ncpus;
    e->lock_algorithm = config->lock_algorithm;
    e->tsc_hz = config->tsc_hz;
    e->clock_source = config->clock_source;
    e->instrument_level = config->instrument_level;
    snprintf(e->hypervisor_signature, sizeof e->hypervisor_signature, "%s", config->hypervisor_signature);
    snprintf(e->build_id, sizeof e->build_id, "%s", config->build_id);
    lt::end_write(c.writer, size, tsc);
}

// One long wait into CPU `cpu`'s buffers (armed). No-drop-stall: waits for a free buffer while
// the session stays; an event it gives up on (the session stopping) is not counted.
void write_wait(Cpu& c, uint32_t cpu, const Wait& w) {
    constexpr uint32_t size = sizeof(spinlab::TraceSpinlockEvent);
    void* room;
    bool waited = false;
    while (!(room = lt::begin_write(c.writer, size, true))) {
        if (!c.writer.must_wait) return;  // lost, counted
        if (!waited) lt::note_stall(c.writer);
        waited = true;
        usleep(1000);
        // A flush request finds no buffer being written: done.
        store(c.flushes_done, load(pub.flush_requests, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
        if (load(pub.stopping, __ATOMIC_ACQUIRE) || load(pub.id) != c.local_id) return;
    }
    auto* e = static_cast<spinlab::TraceSpinlockEvent*>(room);
    lt::fill_header(e->h, size, spinlab::TraceEventType::kSpinlock, cpu, 0, 0, w.end);
    e->lock_address = w.lock;
    e->call_site = 0;
    e->acquire_tsc = w.end;
    e->release_tsc = w.end;  // the release is not known (kTraceSpinWaitOnly)
    e->wait_cycles = w.end - w.start;
    e->spin_count = 0;
    e->holder_steal_ns = 0;
    e->waiter_steal_ns = 0;
    e->class_id = 0;
    e->holder_cpu_start = spinlab::kNoCpu;
    e->holder_cpu_end = spinlab::kNoCpu;
    e->lhp_class = uint8_t(spinlab::LhpClass::kUnknown);
    e->rules = spinlab::kTraceRuleLongWait;
    e->flags = spinlab::kTraceSpinContended | spinlab::kTraceSpinWaitOnly;
    e->handovers = 0;  // not counted: a Linux guest sees no holds (no kTraceSpinHandoversCounted)
    lt::end_write(c.writer, size, w.end);
}

// The kernel's arm_here, and the long waits read before it that belong to the session.
void arm(Cpu& c, uint32_t cpu) {
    lt::writer_arm(c.writer, area, cpu);
    c.local_id = load(pub.id);
    c.session_start = last.start_tsc;  // written before pub.state (release), as pub's fields
    c.stop_seen = false;
    c.armed = true;
    store(c.groups, kServed, __ATOMIC_RELEASE);
    store(c.session_id, c.local_id, __ATOMIC_RELEASE);
    const uint64_t n = c.history_n < kHistory ? c.history_n : kHistory;
    for (uint64_t i = c.history_n - n; i < c.history_n; i++) {
        const Wait& w = c.history[i % kHistory];
        if (w.end >= c.session_start) write_wait(c, cpu, w);
    }
    c.history_n = 0;
}

// The kernel's disarm_here: the final buffer (with the configuration first on CPU 0 at a stop).
void disarm(Cpu& c, uint32_t cpu, bool stop) {
    store(c.groups, 0u);
    c.armed = false;
    if (stop && cpu == kConfigCpu) write_system_config(c, cpu, load(pub.stop_tsc));
    lt::flush(c.writer, spinlab::kTraceBufferFinal);
    store(c.session_id, c.local_id | (1ull << 63), __ATOMIC_RELEASE);
}

// Waits (1 ms sleeps) until every CPU satisfies done(cpu), at most 5 s; a CPU that does not
// answer is named on the console, as the kernel's wait_for_cpus does.
template <class Done>
bool wait_for_cpus(Done done) {
    const uint64_t deadline = now() + config->tsc_hz * 5;
    for (uint32_t k = 0; k < ncpus; k++) {
        while (!done(k)) {
            if (now() > deadline) {
                fprintf(stderr, "spinlab-agent: trace: cpu %u's reader did not answer within 5 s\n", k);
                return false;
            }
            usleep(1000);
        }
    }
    return true;
}

Status start(const spinlab::TraceSessionInformation& in) {
    if (!area || load(pub.state) == uint32_t(TraceState::kRunning)) return Status::kInvalidParameter;
    if (lt::first_invalid_session_param(in) != nullptr) return Status::kInvalidParameter;
    if (const uint32_t extra = in.enable_flags & ~kServed) {
        char names[160] = "";
        for (uint32_t bit = 0; bit < spinlab::kTraceGroupCount; bit++)
            if (extra & (1u << bit))
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? "," : "", spinlab::trace_group_name(bit));
        fprintf(stderr,
                "spinlab-agent: trace: refused a session that enables %s: a Linux guest's agent "
                "sees slow-path waits only and writes the long-wait group alone\n",
                names);
        return Status::kInvalidParameter;
    }
    for (uint32_t k = 0; k < ncpus; k++)
        if (load(cpus[k].alive, __ATOMIC_ACQUIRE) == 2) {
            fprintf(stderr, "spinlab-agent: trace: refused a session: cpu %u's reader of its waits "
                            "has exited (the workload is over)\n", k);
            return Status::kInvalidParameter;
        }
    lt::SessionPlan plan;
    if (!lt::plan_session(in, area_size, ncpus, &plan)) return Status::kInvalidParameter;
    const uint64_t id = pub.id + 1;
    for (uint32_t k = 0; k < ncpus; k++) store(cpus[k].flushes_done, pub.flush_requests);
    lt::area_start(area, area_size, ncpus, in, plan, id, now());
    last = static_cast<const spinlab::TraceAreaHeader*>(static_cast<void*>(area))->session;
    store(pub.flush_cycles, uint64_t(in.flush_timer_ms) * (config->tsc_hz / 1000));
    store(pub.stopping, 0u);
    store(pub.stop_tsc, uint64_t{0});
    store(pub.id, id);
    store(pub.state, uint32_t(TraceState::kRunning), __ATOMIC_RELEASE);
    // A reader that has not started yet (the agent is still setting its probes up: tracing is
    // not on, so it has missed no wait) arms at its first turn.
    wait_for_cpus([&](uint32_t k) {
        return load(cpus[k].session_id, __ATOMIC_ACQUIRE) == id || load(cpus[k].alive, __ATOMIC_ACQUIRE) != 1;
    });
    return Status::kSuccess;
}

Status stop() {
    if (load(pub.state) != uint32_t(TraceState::kRunning)) return Status::kInvalidParameter;
    const uint64_t id = pub.id;
    const uint64_t stop_tsc = now();
    store(pub.stop_tsc, stop_tsc);
    store(pub.stopping, 1u, __ATOMIC_RELEASE);
    wait_for_cpus([&](uint32_t k) {
        return load(cpus[k].session_id, __ATOMIC_ACQUIRE) != id || load(cpus[k].alive, __ATOMIC_ACQUIRE) != 1;
    });
    lt::area_stop(area, stop_tsc);
    last.state = uint32_t(TraceState::kStopped);
    store(pub.state, uint32_t(TraceState::kStopped), __ATOMIC_RELEASE);
    return Status::kSuccess;
}

// kFlush: every armed CPU publishes its partly filled buffer at its reader's next turn; returns
// once all did.
Status flush_all() {
    if (load(pub.state) != uint32_t(TraceState::kRunning)) return Status::kInvalidParameter;
    const uint64_t req = pub.flush_requests + 1;
    store(pub.flush_requests, req, __ATOMIC_RELEASE);
    wait_for_cpus([&](uint32_t k) {
        return load(cpus[k].flushes_done, __ATOMIC_ACQUIRE) >= req || load(cpus[k].groups) == 0;
    });
    return Status::kSuccess;
}

}  // namespace

bool trace_init(const spinlab::SystemConfiguration* cfg, uint32_t cpu_count) {
    uint64_t size = 0;
    void* a = region_trace(&size);
    if (!a || cpu_count > spinlab::kRegionMaxCpus ||
        size < lt::trace_area_needed(spinlab::kTraceMinBufferSize, spinlab::kTraceMinBuffers, cpu_count))
        return false;
    config = cfg;
    ncpus = cpu_count;
    area_size = size;
    last = lt::default_session_params();
    last.state = uint32_t(TraceState::kIdle);
    store(area, static_cast<uint8_t*>(a), __ATOMIC_RELEASE);
    return true;
}

Status trace_control(const spinlab::TraceSessionInformation& in) {
    switch (static_cast<spinlab::TraceCommand>(in.command)) {
        case spinlab::TraceCommand::kStart:
            return start(in);
        case spinlab::TraceCommand::kStop:
            return stop();
        case spinlab::TraceCommand::kFlush:
            return flush_all();
    }
    return Status::kInvalidParameter;
}

void trace_query(spinlab::TraceSessionInformation* out) { lt::session_query(area, last, out); }

extern "C" void trace_reader_started(int cpu) {
    if (cpu < 0 || cpu >= int(spinlab::kRegionMaxCpus)) return;
    Cpu& c = cpus[cpu];
    c.history = static_cast<Wait*>(calloc(kHistory, sizeof(Wait)));
    if (c.history) store(c.alive, 1u, __ATOMIC_RELEASE);  // else no sessions: a start is refused
}

extern "C" void trace_tick(int cpu, uint64_t last_ts, int pipe_empty) {
    if (!load(area, __ATOMIC_ACQUIRE) || cpu < 0 || uint32_t(cpu) >= ncpus) return;
    Cpu& c = cpus[cpu];
    const uint32_t state = load(pub.state, __ATOMIC_ACQUIRE);
    const uint64_t id = load(pub.id);
    const bool stopping = load(pub.stopping, __ATOMIC_ACQUIRE);
    if (c.armed) {
        if (c.local_id != id) {  // another session (cannot happen: a start waits for the stop)
            disarm(c, uint32_t(cpu), false);
        } else if (stopping) {
            // Disarm once everything this CPU stamped before stop_tsc has been read.
            if (last_ts > load(pub.stop_tsc) || (c.stop_seen && pipe_empty)) {
                disarm(c, uint32_t(cpu), true);
                return;
            }
            c.stop_seen = true;
        }
    }
    if (!c.armed && state == uint32_t(TraceState::kRunning) && !stopping && c.local_id != id)
        arm(c, uint32_t(cpu));
    if (!c.armed) return;
    const uint64_t req = load(pub.flush_requests, __ATOMIC_ACQUIRE);
    if (load(c.flushes_done) != req) {
        lt::flush(c.writer, 0);
        store(c.flushes_done, req, __ATOMIC_RELEASE);
    }
    if (const uint64_t age = load(pub.flush_cycles)) lt::flush_if_older(c.writer, now(), age);
}

extern "C" void trace_record_wait(int cpu, uint64_t lock, uint64_t start, uint64_t end) {
    if (!load(area, __ATOMIC_ACQUIRE) || cpu < 0 || uint32_t(cpu) >= ncpus) return;
    if (end - start < config->long_wait_threshold) return;
    Cpu& c = cpus[cpu];
    const Wait w{lock, start, end};
    if (!c.armed) {
        if (c.history) c.history[c.history_n++ % kHistory] = w;
        return;
    }
    if (end < c.session_start) return;  // before the session
    if (load(pub.stopping, __ATOMIC_ACQUIRE) && end > load(pub.stop_tsc)) return;  // after it
    write_wait(c, uint32_t(cpu), w);
}

extern "C" void trace_reader_exit(int cpu) {
    if (cpu < 0 || cpu >= int(spinlab::kRegionMaxCpus)) return;
    Cpu& c = cpus[cpu];
    if (c.armed) disarm(c, uint32_t(cpu), load(pub.stopping, __ATOMIC_ACQUIRE) != 0);
    store(c.alive, 2u, __ATOMIC_RELEASE);
}
