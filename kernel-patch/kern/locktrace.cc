// kern/locktrace.cc: see locktrace.h.
#include "locktrace.h"

#include <build_id.h>  // SPINLAB_BUILD_ID

#include "../arch/x86.h"
#include "../lib/format.h"
#include "../lockstat/build_level.h"
#include "../lockstat/clock.h"
#include "../locktrace/trace_session.h"
#include "../locktrace/spinlock_event.h"
#include "../locktrace/user_ring.h"
#include "address_space.h"
#include "console.h"
#include "kvm.h"
#include "lapic.h"
#include "lockstat.h"
#include "locktrace_stacks.h"
#include "mem.h"
#include "proc.h"
#include "region.h"
#include "sched.h"
#include "trap.h"

namespace {

namespace lt = spinlab::locktrace;
using spinlab::TraceEventType;
using spinlab::TraceState;

LocktraceCpu cpus[kMaxCpus];

// The trace area: the region's trace section, else private pages (no ivshmem: self-tests).
uint8_t* area;
uint64_t area_size;
constexpr uint64_t kPrivateAreaPages = 1024;  // 4 MiB

// The session as the ticks see it. Written by the controlling CPU (sysinfo set lock held),
// read by every CPU's tick: whole fields, relaxed, `state` last on start (release).
struct Published {
    uint64_t id;
    uint32_t state;     // TraceState
    uint32_t stopping;  // 1: disarm at the next tick
    uint32_t groups;
    uint32_t profile_interval;
    uint32_t stack_flags;   // groups whose events get a stack
    uint64_t flush_cycles;  // FlushTimer in clock cycles; 0: never
    uint64_t flush_requests;  // kFlush commands so far: each CPU flushes when it sees a new one
} pub;
uint64_t flushes_done[kMaxCpus];  // per CPU: the last flush request it carried out

spinlab::TraceSessionInformation last;  // parameters of the current or last session

uint64_t now() { return spinlab::lockstat::read_clock(g_lockcfg.clock); }

// This CPU, interrupts off.
void arm_here(LocktraceCpu& c, uint32_t cpu) {
    lt::writer_arm(c.writer, area, cpu);
    c.countdowns = {};
    c.profile_left = __atomic_load_n(&pub.profile_interval, __ATOMIC_RELAXED);
    c.session_id = __atomic_load_n(&pub.id, __ATOMIC_RELAXED);
    c.session_start = last.start_tsc;  // written before pub.state (release), as pub's fields
    const uint32_t groups = __atomic_load_n(&pub.groups, __ATOMIC_RELAXED);
    c.stack_flags = __atomic_load_n(&pub.stack_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&c.groups, groups, __ATOMIC_RELEASE);
    // Ring-3 lock code on this CPU (lockbench) sees the session here.
    __atomic_store_n(&lockstat_this_cpu()->trace_stack_groups, c.stack_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&lockstat_this_cpu()->trace_groups, groups, __ATOMIC_RELEASE);
}

void take_current_ring();

void disarm_here(LocktraceCpu& c) {
    take_current_ring();  // the interrupted thread's ring-3 events are this session's
    __atomic_store_n(&c.groups, 0u, __ATOMIC_RELAXED);  // no new events from here on
    __atomic_store_n(&lockstat_this_cpu()->trace_groups, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&lockstat_this_cpu()->trace_stack_groups, 0u, __ATOMIC_RELAXED);
    // Every stack still cached, and the cache's counters, before the final buffer.
    if (c.stack_flags) locktrace_stack_rundown(c.writer.cpu, now());
    c.stack_flags = 0;
    lt::flush(c.writer, spinlab::kTraceBufferFinal);
    __atomic_store_n(&c.session_id, c.session_id | (1ull << 63), __ATOMIC_RELEASE);  // "done"
}

uint32_t tid_of(const Thread* t) { return t ? uint32_t(t->tid) : 0; }
uint32_t pid_of(const Thread* t) { return t && t->proc ? uint32_t(t->proc->pid) : 0; }

// Room for `size` bytes of an event of `groups` on the writer of the CPU the caller runs on.
// Called with interrupts off; f is what irq_save() returned (the caller's interrupt flag).
// No-drop-stall mode, the caller allowed to wait (`may_wait`) and its interrupts on: while no
// buffer is free it waits for the host with interrupts on between tries, so the CPU keeps
// taking its ticks (a thread that may be preempted can come back on another CPU: *cpu follows
// it). With interrupts off it never waits: the event is lost and counted. Returns with
// interrupts off; null when the event was lost (counted) or the session left the CPU while it
// waited (then nothing is counted: the event falls outside the session's window).
void* claim(uint32_t groups, uint32_t size, uint64_t f, bool may_wait, uint32_t* cpu) {
    may_wait = may_wait && (f & arch::kFlagIF) != 0;
    bool waited = false;
    for (;;) {
        *cpu = cpu_number();
        LocktraceCpu& c = cpus[*cpu];
        if (!(__atomic_load_n(&c.groups, __ATOMIC_RELAXED) & groups)) return nullptr;
        take_current_ring();  // the current thread's ring-3 events are older than this one
        void* room = lt::begin_write(c.writer, size, may_wait);
        if (room != nullptr || !c.writer.must_wait) return room;
        if (!waited) lt::note_stall(c.writer);
        waited = true;
        irq_restore(f);  // interrupts on: this CPU's ticks run, the host gives buffers back
        arch::pause();
        (void)irq_save();
    }
}

// BeginWrite/EndWrite of one core event of type E on this CPU, interrupts off around it, then
// its stack when the session asks for one: the interrupted context's when stack_tf is given
// (a profile sample), else the caller's. may_wait: false for the events a session command
// writes itself (rundown at start, configuration at stop: the host waits for the command's
// answer and drains only after it), true for every other (claim() waits only with interrupts
// on in no-drop-stall mode).
template <class E, class Fill>
bool write_event(uint32_t group, TraceEventType type, bool may_wait, Fill fill,
                 const TrapFrame* stack_tf = nullptr) {
    const uint64_t f = irq_save();
    uint32_t cpu;
    bool ok = false;
    if (E* e = static_cast<E*>(claim(group, sizeof(E), f, may_wait, &cpu))) {
        LocktraceCpu& c = cpus[cpu];
        const uint64_t tsc = now();
        const Thread* t = this_cpu()->current;
        lt::fill_header(e->h, sizeof(E), type, cpu, tid_of(t), pid_of(t), tsc);
        fill(*e);
        lt::end_write(c.writer, sizeof(E), tsc);
        ok = true;
        if (group != ~0u && (c.stack_flags & group)) {  // ~0u: the configuration event
            if (stack_tf) locktrace_stack_trap(cpu, uint16_t(type), tsc, stack_tf);
            else locktrace_stack_here(cpu, uint16_t(type), tsc);
        }
    }
    irq_restore(f);
    return ok;
}

void copy_name(char* dst, const char* src) {
    uint32_t i = 0;
    for (; src && src[i] && i + 1 < spinlab::kTraceNameLen; i++) dst[i] = src[i];
    for (; i < spinlab::kTraceNameLen; i++) dst[i] = 0;
}

// Rundowns are written by the start command: they never wait (write_event).
void write_thread_event(TraceEventType type, const Thread* t) {
    write_event<spinlab::TraceThreadEvent>(
        spinlab::kTraceGroupProcessThread, type, type != TraceEventType::kThreadRundown, [&](spinlab::TraceThreadEvent& e) {
            e.thread_id = tid_of(t);
            e.process_id = pid_of(t);
            e.affinity_cpu = t->affinity < 0 ? kNoCpu : uint32_t(t->affinity);
            e.reserved = 0;
            copy_name(e.name, t->name);
        });
}

void write_process_event(TraceEventType type, const Process* p) {
    write_event<spinlab::TraceProcessEvent>(
        spinlab::kTraceGroupProcessThread, type, type != TraceEventType::kProcessRundown, [&](spinlab::TraceProcessEvent& e) {
            e.process_id = uint32_t(p->pid);
            e.parent_id = p->parent ? uint32_t(p->parent->pid) : 0;  // 0: the kernel's, or orphaned
            e.exit_code = type == TraceEventType::kProcessEnd ? uint32_t(p->exit_code) : 0;
            e.reserved = 0;
            copy_name(e.name, p->name);
        });
}

void write_system_config() {
    write_event<spinlab::TraceSystemConfigEvent>(
        ~0u, TraceEventType::kSystemConfig, false, [](spinlab::TraceSystemConfigEvent& e) {
            e.cpu_count = g_ncpus;
            e.lock_algorithm = uint32_t(g_lockcfg.algorithm);
            e.tsc_hz = g_tsc_hz;
            e.clock_source = uint32_t(g_lockcfg.clock);
            e.instrument_level = uint32_t(spinlab::lockstat::kBuildLevel);
            format(e.hypervisor_signature, sizeof e.hypervisor_signature, "%s", g_kvm.signature);
            format(e.build_id, sizeof e.build_id, "%s", SPINLAB_BUILD_ID);
        });
}

// Waits (interrupts on) until every other online CPU satisfies done(cpu); false on timeout.
template <class Done>
bool wait_for_cpus(Done done) {
    const uint64_t deadline = arch::rdtsc_lfence() + g_tsc_hz * 5;
    for (uint32_t k = 0; k < g_ncpus; k++) {
        while (!done(k)) {
            if (arch::rdtsc_lfence() > deadline) {
                kprintf("locktrace: cpu %u did not answer on its timer tick\n", k);
                return false;
            }
            arch::pause();
        }
    }
    return true;
}

spinlab::Status start(const spinlab::TraceSessionInformation& in) {
    if (pub.state == uint32_t(TraceState::kRunning)) return spinlab::Status::kInvalidParameter;
    if (lt::first_invalid_session_param(in) != nullptr) return spinlab::Status::kInvalidParameter;
    // Spinlock events are written by the full instrumentation only (lock_release<kFull>): a
    // counters-only kernel (INSTRUMENT=2) would run the session and write none of them.
    if (spinlab::lockstat::kBuildLevel != spinlab::InstrumentLevel::kFull &&
        (in.enable_flags & spinlab::kTraceGroupSpinlock)) {
        kprintf("locktrace: the spinlock group needs the full instrumentation; this kernel is %s\n",
                spinlab::instrument_level_name(spinlab::lockstat::kBuildLevel));
        return spinlab::Status::kInvalidParameter;
    }
    lt::SessionPlan plan;
    if (!area || !lt::plan_session(in, area_size, g_ncpus, &plan))
        return spinlab::Status::kInvalidParameter;  // fewer than MinimumBuffers fit
    const uint64_t id = pub.id + 1;
    for (uint32_t k = 0; k < g_ncpus; k++) flushes_done[k] = pub.flush_requests;
    lt::area_start(area, area_size, g_ncpus, in, plan, id, now());
    last = static_cast<const spinlab::TraceAreaHeader*>(static_cast<void*>(area))->session;
    __atomic_store_n(&pub.groups, in.enable_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&pub.profile_interval, in.profile_interval, __ATOMIC_RELAXED);
    __atomic_store_n(&pub.stack_flags, locktrace_stacks_start(g_ncpus) & in.enable_flags,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&pub.flush_cycles, uint64_t(in.flush_timer_ms) * (g_tsc_hz / 1000),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&pub.stopping, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&pub.id, id, __ATOMIC_RELAXED);
    __atomic_store_n(&pub.state, uint32_t(TraceState::kRunning), __ATOMIC_RELEASE);
    {
        const uint64_t f = irq_save();
        arm_here(cpus[cpu_number()], cpu_number());
        irq_restore(f);
    }
    wait_for_cpus([&](uint32_t k) {
        return __atomic_load_n(&cpus[k].session_id, __ATOMIC_ACQUIRE) == id;
    });
    // Rundown: the processes, then the threads, already running when the session started.
    if (in.enable_flags & spinlab::kTraceGroupProcessThread)
        proc_for_each([](const Process* p) { write_process_event(TraceEventType::kProcessRundown, p); });
    if (in.enable_flags & spinlab::kTraceGroupProcessThread)
        sched_for_each_thread([](const Thread* t) {
            write_thread_event(TraceEventType::kThreadRundown, t);
        });
    return spinlab::Status::kSuccess;
}

spinlab::Status stop() {
    if (pub.state != uint32_t(TraceState::kRunning)) return spinlab::Status::kInvalidParameter;
    const uint64_t id = pub.id;
    write_system_config();
    __atomic_store_n(&pub.stopping, 1u, __ATOMIC_RELEASE);
    {
        const uint64_t f = irq_save();
        disarm_here(cpus[cpu_number()]);
        irq_restore(f);
    }
    wait_for_cpus([&](uint32_t k) {
        return __atomic_load_n(&cpus[k].session_id, __ATOMIC_ACQUIRE) != id;
    });
    lt::area_stop(area, now());
    last.state = uint32_t(TraceState::kStopped);
    __atomic_store_n(&pub.state, uint32_t(TraceState::kStopped), __ATOMIC_RELEASE);
    return spinlab::Status::kSuccess;
}

// kFlush: every CPU publishes its partly filled buffer (this one now, the others on their next
// timer tick); returns once all did, so a host that reads the area afterwards (a circular
// session's snapshot) sees every event written before the command.
spinlab::Status flush_all() {
    if (pub.state != uint32_t(TraceState::kRunning)) return spinlab::Status::kInvalidParameter;
    const uint64_t req = pub.flush_requests + 1;
    {
        const uint64_t f = irq_save();
        lt::flush(cpus[cpu_number()].writer, 0);
        __atomic_store_n(&flushes_done[cpu_number()], req, __ATOMIC_RELAXED);
        irq_restore(f);
    }
    __atomic_store_n(&pub.flush_requests, req, __ATOMIC_RELEASE);
    // A CPU that does not answer within wait_for_cpus' bound is named on the console, as for
    // a stop; the flush still succeeded on every other CPU.
    wait_for_cpus([&](uint32_t k) {
        return __atomic_load_n(&flushes_done[k], __ATOMIC_ACQUIRE) >= req ||
               __atomic_load_n(&cpus[k].groups, __ATOMIC_RELAXED) == 0;
    });
    return spinlab::Status::kSuccess;
}

}  // namespace

void locktrace_early_cpu(Prcb* p) { p->locktrace = &cpus[p->number]; }

void locktrace_init() {
    if (!kLocktraceBuilt) return;
    uint64_t size = 0;
    void* a = region_trace(&size);
    if (a && size >= lt::trace_area_needed(spinlab::kTraceMinBufferSize, spinlab::kTraceMinBuffers, g_ncpus)) {
        area = static_cast<uint8_t*>(a);
        area_size = size;
    } else if (uint64_t p = pages_alloc_uncleared(kPrivateAreaPages)) {
        // lt::area_start lays out the header, each CPU's control and slots; a writer fills each
        // buffer before it is published. Only the header's magic must read "never started".
        __builtin_memset(reinterpret_cast<void*>(p), 0, sizeof(spinlab::TraceAreaHeader));
        area = reinterpret_cast<uint8_t*>(p);
        area_size = kPrivateAreaPages * 4096;
    }
    last = lt::default_session_params();
    last.state = uint32_t(TraceState::kIdle);
    locktrace_stacks_init();
    kprintf("locktrace: trace area %lu KiB (%s)\n", area_size >> 10,
            a && area == a ? "shared region" : "private");
}

constexpr uint32_t kSpinGroups = spinlab::kTraceGroupSpinlock | spinlab::kTraceGroupLongWait;

// Before the lock is let go (preemption or interrupts off: the thread stays on this CPU). In
// no-drop-stall mode with interrupts on, the release waits for a buffer with the lock held:
// blocking mode's price, paid by every waiter of that lock.
void locktrace_spin_release(const spinlab::spinlock::Lock& l, uint64_t release_tsc) {
    const uint64_t f = irq_save();
    uint32_t cpu = cpu_number();
    LocktraceCpu& c = cpus[cpu];
    const uint32_t groups = __atomic_load_n(&c.groups, __ATOMIC_RELAXED);
    if (groups) {
        const Thread* t = this_cpu()->current;
        const lt::ReleaseContext rc{&c.writer, &c.countdowns, &g_spinlock_params, groups,
                                    g_lockcfg.long_wait_threshold, tid_of(t), pid_of(t)};
        lt::HoldFacts facts;
        const uint8_t rules = lt::decide_spinlock_release(rc, l, release_tsc, &facts);
        if (rules != 0) {
            if (void* room = claim(kSpinGroups, sizeof(spinlab::TraceSpinlockEvent), f, true, &cpu)) {
                lt::write_spinlock_event(rc, room, l, facts, release_tsc, rules);
                if (c.stack_flags & kSpinGroups)
                    locktrace_stack_here(cpu, uint16_t(TraceEventType::kSpinlock), release_tsc);
            }
        }
    }
    irq_restore(f);
}

bool locktrace_user_spinlock_impl(const spinlab::TraceSpinlockEvent& in) {
    const uint64_t f = irq_save();
    uint32_t cpu = cpu_number();
    const uint8_t rules = lt::rules_enabled(in.rules, __atomic_load_n(&cpus[cpu].groups, __ATOMIC_RELAXED));
    if (rules) {
        constexpr uint32_t size = sizeof(spinlab::TraceSpinlockEvent);
        // A system call (interrupts on): in no-drop-stall mode it may wait, and come back on
        // another CPU.
        auto* e = static_cast<spinlab::TraceSpinlockEvent*>(claim(kSpinGroups, size, f, true, &cpu));
        if (e) {  // else lost, counted
            LocktraceCpu& c = cpus[cpu];
            *e = in;
            // Now, not release_tsc: other events (the system call's own) came in between.
            const uint64_t tsc = now();
            const Thread* t = this_cpu()->current;
            lt::fill_header(e->h, size, TraceEventType::kSpinlock, cpu, tid_of(t), pid_of(t), tsc);
            e->rules = rules;
            // handovers: the thread's count of the holds begun during its wait, as given
            lt::end_write(c.writer, size, tsc);
            // The system call's kernel frames, then the program's: where it took the lock.
            if (c.stack_flags & kSpinGroups)
                locktrace_stack_here(cpu, uint16_t(TraceEventType::kSpinlock), tsc);
        }
    }
    irq_restore(f);
    return rules != 0;
}

void locktrace_tick_impl(const TrapFrame* tf) {
    const uint64_t rip = tf->rip;
    const bool user_mode = trap_from_user(tf);
    const uint32_t cpu = cpu_number();
    LocktraceCpu& c = cpus[cpu];
    const uint32_t state = __atomic_load_n(&pub.state, __ATOMIC_ACQUIRE);
    const uint64_t id = __atomic_load_n(&pub.id, __ATOMIC_RELAXED);
    const bool stopping = __atomic_load_n(&pub.stopping, __ATOMIC_RELAXED);
    if (c.groups) {
        if (stopping || c.session_id != id) {
            disarm_here(c);
            return;
        }
    } else if (state == uint32_t(TraceState::kRunning) && !stopping && c.session_id != id) {
        arm_here(c, cpu);
    }
    take_current_ring();  // armed: into this CPU's stream; else discarded (outside a session)
    if (!c.groups) return;
    const uint64_t flush_req = __atomic_load_n(&pub.flush_requests, __ATOMIC_ACQUIRE);
    if (flushes_done[cpu] != flush_req) {
        lt::flush(c.writer, 0);
        __atomic_store_n(&flushes_done[cpu], flush_req, __ATOMIC_RELEASE);
    }
    const uint64_t age = __atomic_load_n(&pub.flush_cycles, __ATOMIC_RELAXED);
    if (age) lt::flush_if_older(c.writer, now(), age);
    if ((c.groups & spinlab::kTraceGroupProfile) && --c.profile_left == 0) {
        c.profile_left = __atomic_load_n(&pub.profile_interval, __ATOMIC_RELAXED);
        write_event<spinlab::TraceProfileEvent>(spinlab::kTraceGroupProfile,
                                                TraceEventType::kProfile, true,
                                                [&](spinlab::TraceProfileEvent& e) {
                                                    e.instruction_pointer = rip;
                                                    e.user_mode = user_mode;
                                                    e.reserved = 0;
                                                },
                                                tf);
    }
}

spinlab::Status locktrace_control(const spinlab::TraceSessionInformation& in) {
    switch (static_cast<spinlab::TraceCommand>(in.command)) {
        case spinlab::TraceCommand::kStart:
            return start(in);
        case spinlab::TraceCommand::kStop:
            return stop();
        case spinlab::TraceCommand::kFlush:
            return flush_all();
    }
    return spinlab::Status::kInvalidParameter;
}

void locktrace_query(spinlab::TraceSessionInformation* out) { lt::session_query(area, last, out); }

void locktrace_context_switch_impl(const Thread* prev, const Thread* next) {
    write_event<spinlab::TraceContextSwitchEvent>(
        spinlab::kTraceGroupContextSwitch, TraceEventType::kContextSwitch, true,
        [&](spinlab::TraceContextSwitchEvent& e) {
            e.old_thread_id = tid_of(prev);
            e.new_thread_id = tid_of(next);
            e.old_process_id = pid_of(prev);
            e.new_process_id = pid_of(next);
            spinlab::TraceThreadState s = spinlab::TraceThreadState::kReady;
            spinlab::TraceWaitReason r = spinlab::TraceWaitReason::kNone;
            switch (prev->state) {
                case ThreadState::kRunning:
                    s = spinlab::TraceThreadState::kRunning;
                    break;
                case ThreadState::kSleeping:
                    s = spinlab::TraceThreadState::kSleeping;
                    r = prev->wake_tsc ? spinlab::TraceWaitReason::kTimedSleep
                                       : spinlab::TraceWaitReason::kSleep;
                    break;
                case ThreadState::kZombie:
                    s = spinlab::TraceThreadState::kZombie;
                    r = spinlab::TraceWaitReason::kExit;
                    break;
                default:
                    break;
            }
            e.old_state = uint8_t(s);
            e.wait_reason = uint8_t(r);
            for (uint8_t& b : e.reserved) b = 0;
        });
}

void locktrace_ready_thread_impl(const Thread* readied) {
    write_event<spinlab::TraceReadyThreadEvent>(
        spinlab::kTraceGroupReadyThread, TraceEventType::kReadyThread, true,
        [&](spinlab::TraceReadyThreadEvent& e) {
            e.readied_thread_id = tid_of(readied);
            e.readied_process_id = pid_of(readied);
        });
}

void locktrace_syscall_enter_impl(uint64_t number, uint64_t a0, uint64_t a1, uint64_t a2) {
    write_event<spinlab::TraceSyscallEnterEvent>(
        spinlab::kTraceGroupSyscall, TraceEventType::kSyscallEnter, true,
        [&](spinlab::TraceSyscallEnterEvent& e) {
            e.number = number;
            e.args[0] = a0;
            e.args[1] = a1;
            e.args[2] = a2;
        });
}

void locktrace_syscall_exit_impl(uint64_t number, uint64_t result) {
    write_event<spinlab::TraceSyscallExitEvent>(
        spinlab::kTraceGroupSyscall, TraceEventType::kSyscallExit, true,
        [&](spinlab::TraceSyscallExitEvent& e) {
            e.number = number;
            e.result = result;
        });
}

void locktrace_thread_event_impl(TraceEventType type, const Thread* t) { write_thread_event(type, t); }
void locktrace_process_event_impl(TraceEventType type, const Process* p) { write_process_event(type, p); }
void locktrace_memory_event_impl(TraceEventType type, uint32_t pid, uint64_t va, uint64_t len, uint32_t flags) {
    write_event<spinlab::TraceMemoryEvent>(spinlab::kTraceGroupMemory, type, true, [&](spinlab::TraceMemoryEvent& e) {
        e.virtual_address = va;
        e.length = len;
        e.process_id = pid;
        e.flags = flags;
    });
}

const void* locktrace_area() { return area; }
uint64_t locktrace_area_size() { return area_size; }

// --- the user-mode logger ----------------------------------------------------------------------

namespace {

constexpr spinlab::TraceEventType kMap = TraceEventType::kMemoryMap;
constexpr uint64_t kRingBytes = (lt::user_ring_bytes(spinlab::kTraceUserRingCapacity) + 4095) & ~4095ull;

// A process's rings, one per thread slot (a thread that takes a slot later gets its ring).
struct ProcessRings {
    lt::UserRingCursor cursor[kMaxProcThreads];
    uint64_t user_va[kMaxProcThreads];  // 0: none yet
};

// Takes the ring of t (current on this CPU, interrupts off) into this CPU's stream; discards
// it while no session with a spinlock group runs here. Returns the records taken.
uint32_t take_ring(lt::UserRingCursor& r, const Thread* t, bool may_wait) {
    const uint32_t cpu = cpu_number();
    LocktraceCpu& c = cpus[cpu];
    const uint32_t groups = __atomic_load_n(&c.groups, __ATOMIC_RELAXED);
    lt::UserRingTake k;
    k.writer = (groups & kSpinGroups) ? &c.writer : nullptr;
    k.groups = groups;
    k.cpu = cpu;
    k.thread_id = tid_of(t);
    k.process_id = pid_of(t);
    k.session_start_tsc = c.session_start;
    k.clock = now;
    k.may_wait = may_wait && k.writer != nullptr && c.writer.mode == spinlab::TraceLoggerMode::kNoDropStall;
    return lt::user_ring_take(r, k);
}

void take_current_ring() {
    const Thread* t = this_cpu()->current;
    if (t == nullptr || t->trace_ring == nullptr) return;
    auto& r = *static_cast<lt::UserRingCursor*>(t->trace_ring);
    if (lt::user_ring_pending(r)) take_ring(r, t, false);
}

}  // namespace

int64_t locktrace_ring_map_impl(Process* p) {
    Thread* t = current_thread();
    if (!p->lockstat_mapped) return -int64_t(spinlab::kErrPerm);
    const int slot = proc_thread_slot(p, t);
    if (slot < 0) return -int64_t(spinlab::kErrInval);
    ProcessRings* pr;
    {
        SpinGuard g(&g_proc_lock);  // threads of one process may ask at once
        if (p->trace_rings == nullptr) p->trace_rings = kzalloc(sizeof(ProcessRings));
        pr = static_cast<ProcessRings*>(p->trace_rings);
    }
    if (pr == nullptr) return -int64_t(spinlab::kErrNoMem);
    // The slot is this thread's alone until it exits: no lock for what follows.
    if (pr->user_va[slot] == 0) {
        const uint64_t pa = pages_alloc(kRingBytes / 4096);
        if (pa == 0) return -int64_t(spinlab::kErrNoMem);
        const uint64_t va = as_map_shared_anywhere(p->as, pa, kRingBytes, true);
        if (va == 0) {
            for (uint64_t i = 0; i < kRingBytes / 4096; i++) page_free(pa + i * 4096);
            return -int64_t(spinlab::kErrNoMem);
        }
        lt::user_ring_init(pr->cursor[slot], reinterpret_cast<void*>(pa), spinlab::kTraceUserRingCapacity, now());
        pr->user_va[slot] = va;
        locktrace_memory_event(kMap, uint32_t(p->pid), va, kRingBytes, kTraceMemUser | kTraceMemWritable);
    }
    __atomic_store_n(&t->trace_ring, static_cast<void*>(&pr->cursor[slot]), __ATOMIC_RELEASE);
    return int64_t(pr->user_va[slot]);
}

int64_t locktrace_ring_drain_impl() {
    Thread* t = current_thread();
    if (t->trace_ring == nullptr) return -int64_t(spinlab::kErrInval);
    auto& r = *static_cast<lt::UserRingCursor*>(t->trace_ring);
    const uint64_t f = irq_save();
    int64_t taken = 0;
    bool waited = false;
    for (;;) {
        // A system call: interrupts were on, so in no-drop-stall mode it may wait for buffers,
        // with interrupts on between tries (it may come back on another CPU: its ring follows).
        taken += take_ring(r, t, (f & arch::kFlagIF) != 0);
        LocktraceCpu& c = cpus[cpu_number()];
        if (!r.must_wait) break;
        if (!waited) lt::note_stall(c.writer);
        waited = true;
        irq_restore(f);
        arch::pause();
        (void)irq_save();
    }
    irq_restore(f);
    return taken;
}

void locktrace_thread_off_impl(Thread* t) {
    auto& r = *static_cast<lt::UserRingCursor*>(t->trace_ring);
    if (lt::user_ring_pending(r)) take_ring(r, t, false);
}

void locktrace_process_reaped_impl(Process* p) {
    auto* pr = static_cast<ProcessRings*>(p->trace_rings);
    for (int i = 0; i < kMaxProcThreads; i++) {
        if (pr->user_va[i] == 0) continue;
        const uint64_t pa = reinterpret_cast<uint64_t>(pr->cursor[i].ring);
        for (uint64_t k = 0; k < kRingBytes / 4096; k++) page_free(pa + k * 4096);
    }
    kfree(pr);
    p->trace_rings = nullptr;
}
