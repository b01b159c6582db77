// kern/locktrace.h: trace sessions in the kernel (the locktrace layer: above lockstat, below
// sysinfo). Per-CPU event writers over the trace area of the shared region (spinlab/trace.h,
// locktrace/writer.h), sampled spinlock events and long waits at release, and core events.
//
// Per CPU (the PRCB's `locktrace` points at its LocktraceCpu from prcb_init_cpu on, so no
// path tests for null): `groups` is the session's enable mask while this CPU is armed, 0
// otherwise; every write happens on the owning CPU with interrupts off.
//
// No-drop-stall (blocking) sessions: an event whose writer had interrupts on waits for a free
// buffer, with interrupts on between tries (the CPU keeps its ticks, which may disarm it: the
// event then falls outside the session); a kernel lock's event waits with the lock still held.
// With interrupts off the event is lost and counted, never waited for. The events the start
// and stop commands write themselves (rundown, configuration) never wait.
//
// Flush (kFlush): every CPU publishes its partly filled buffer, the others on their next tick;
// the command returns once all did (a circular session's snapshot reads the area then).
//
// Starting and stopping (sysinfo, set class 0x1F / kSpinlabTraceSession, serialised by the
// sysinfo set lock): the caller lays out the area (no CPU writes: all are disarmed), publishes
// the session, arms its own CPU and waits until every other CPU has armed itself on its next
// timer tick. A stop publishes "stopping"; each CPU flushes its last buffer (final) and disarms
// on its next tick; the caller writes the system configuration event, flushes its own, waits
// for the others, then marks the area stopped. So a start and a stop bracket an exact window
// on every CPU, and after a stop every CPU is quiescent: the loss accounting is exact.
//
// INSTRUMENT=0 builds none of the spinlock hooks (lockstat compiles them out); spinlock events
// need the full level (INSTRUMENT=1): they ride on its hold timing.
#pragma once
#include <spinlab/status.h>
#include <spinlab/syscall.h>
#include <spinlab/trace.h>
#include <stdint.h>

#include "../lockstat/build_level.h"
#include "../locktrace/sampling.h"
#include "../locktrace/writer.h"
#include "../spinlock/lock.h"
#include "prcb.h"
#include "proc.h"
#include "sched.h"

struct Process;
struct Thread;
struct TrapFrame;

struct LocktraceCpu {
    uint32_t groups;         // enable flags while armed, else 0 (read by this CPU's lock paths)
    uint32_t profile_left;   // timer ticks until the next profile sample
    uint32_t stack_flags;    // groups whose events get a stack (kern/locktrace_stacks.h) while armed
    uint64_t session_id;     // the session this CPU armed for
    uint64_t session_start;  // its start (clock=): older ring-3 records are an earlier session's
    spinlab::locktrace::Writer writer;
    spinlab::locktrace::SampleCountdowns countdowns;
};

void locktrace_early_cpu(Prcb* p);  // from prcb_init_cpu
void locktrace_init();              // boot CPU after smp_init: the trace area (region or pages)

inline LocktraceCpu* locktrace_this_cpu() {
    return static_cast<LocktraceCpu*>(this_cpu()->locktrace);
}
inline bool locktrace_wants(uint32_t group) { return locktrace_this_cpu()->groups & group; }

// The spinlock hooks (kern/spinlock.cc's Env).
inline bool locktrace_spin_tracing() {
    return locktrace_wants(spinlab::kTraceGroupSpinlock | spinlab::kTraceGroupLongWait);
}
void locktrace_spin_release(const spinlab::spinlock::Lock& l, uint64_t release_tsc);

// INSTRUMENT=0: no trace sessions (sysinfo refuses the sub-class) and every hook below is an
// empty inline function.
constexpr bool kLocktraceBuilt = spinlab::lockstat::kBuildLevel != spinlab::InstrumentLevel::kOff;

// Every CPU's timer interrupt (interrupts off): arm/disarm, FlushTimer, profile samples (with
// the interrupted context's stack when asked for).
void locktrace_tick_impl(const TrapFrame* tf);
inline void locktrace_tick(const TrapFrame* tf) {
    if constexpr (kLocktraceBuilt) locktrace_tick_impl(tf);
}

// Session control and status (sysinfo). Status values of spinlab/status.h.
spinlab::Status locktrace_control(const spinlab::TraceSessionInformation& in);
void locktrace_query(spinlab::TraceSessionInformation* out);

// The trace area (for the self-tests, which read it as the host does).
const void* locktrace_area();
uint64_t locktrace_area_size();

// Core events (each a no-op unless its group is enabled on this CPU).
void locktrace_context_switch_impl(const Thread* prev, const Thread* next);
void locktrace_ready_thread_impl(const Thread* readied);
void locktrace_syscall_enter_impl(uint64_t number, uint64_t a0, uint64_t a1, uint64_t a2);
void locktrace_syscall_exit_impl(uint64_t number, uint64_t result);
void locktrace_thread_event_impl(spinlab::TraceEventType type, const Thread* t);

inline void locktrace_context_switch(const Thread* prev, const Thread* next) {  // sched lock held
    if constexpr (kLocktraceBuilt) locktrace_context_switch_impl(prev, next);
}
inline void locktrace_ready_thread(const Thread* readied) {
    if constexpr (kLocktraceBuilt) locktrace_ready_thread_impl(readied);
}
inline void locktrace_syscall_enter(uint64_t number, uint64_t a0, uint64_t a1, uint64_t a2) {
    if constexpr (kLocktraceBuilt) locktrace_syscall_enter_impl(number, a0, a1, a2);
}
inline void locktrace_syscall_exit(uint64_t number, uint64_t result) {
    if constexpr (kLocktraceBuilt) locktrace_syscall_exit_impl(number, result);
}
// A ring-3 lock's spinlock event (kSysTraceSpinlock): payload and rules from the caller, the
// header from here; rules the session does not enable are dropped. False: nothing to write.
bool locktrace_user_spinlock_impl(const spinlab::TraceSpinlockEvent& e);
inline bool locktrace_user_spinlock(const spinlab::TraceSpinlockEvent& e) {
    if constexpr (kLocktraceBuilt) return locktrace_user_spinlock_impl(e);
    else return false;
}
// The user-mode logger (spinlab/trace.h, TraceUserRing; kSysTraceRing). A thread's ring is taken
// into the stream of the CPU it runs on when it leaves the CPU (sched), at the CPU's tick, before
// the CPU writes an event of its own while the thread is current, at a stop, and on request.
// map: the calling thread's ring (made and mapped at its first call) -> its user address, or
// -Error (-kErrPerm: the process did not map its counters, kSysMapLockstat). drain: takes the
// calling thread's ring now (no-drop-stall: waits for buffers with interrupts on) -> records
// taken. reaped: frees a reaped process's rings (its address space is gone).
int64_t locktrace_ring_map_impl(Process* p);
int64_t locktrace_ring_drain_impl();
void locktrace_thread_off_impl(Thread* t);
void locktrace_process_reaped_impl(Process* p);
inline int64_t locktrace_ring_map(Process* p) {
    if constexpr (kLocktraceBuilt) return locktrace_ring_map_impl(p);
    else return -int64_t(spinlab::kErrNoSys);
}
inline int64_t locktrace_ring_drain() {
    if constexpr (kLocktraceBuilt) return locktrace_ring_drain_impl();
    else return -int64_t(spinlab::kErrNoSys);
}
inline void locktrace_thread_off(Thread* t) {  // interrupts off, t current and leaving
    if constexpr (kLocktraceBuilt)
        if (t->trace_ring != nullptr) locktrace_thread_off_impl(t);
}
inline void locktrace_process_reaped(Process* p) {
    if constexpr (kLocktraceBuilt)
        if (p->trace_rings != nullptr) locktrace_process_reaped_impl(p);
}
inline void locktrace_thread_event(spinlab::TraceEventType type, const Thread* t) {
    if constexpr (kLocktraceBuilt) locktrace_thread_event_impl(type, t);
}
// Process start (spawned, before its first thread starts) and end (its last thread left): the
// process group. The rundown of the processes alive when a session starts is written by start.
void locktrace_process_event_impl(spinlab::TraceEventType type, const Process* p);
inline void locktrace_process_event(spinlab::TraceEventType type, const Process* p) {
    if constexpr (kLocktraceBuilt) locktrace_process_event_impl(type, p);
}
// Memory map and unmap (the memory group): a range of a process's user address space, written
// where the kernel knows the process (spawn, the map system calls, reap). flags: 1 writable,
// 2 user. A process's address space goes at once when it is reaped: one unmap of its whole range.
inline constexpr uint32_t kTraceMemWritable = 1, kTraceMemUser = 2;
void locktrace_memory_event_impl(spinlab::TraceEventType type, uint32_t pid, uint64_t va, uint64_t len,
                                 uint32_t flags);
inline void locktrace_memory_event(spinlab::TraceEventType type, uint32_t pid, uint64_t va, uint64_t len,
                                   uint32_t flags) {
    if constexpr (kLocktraceBuilt) locktrace_memory_event_impl(type, pid, va, len, flags);
}
