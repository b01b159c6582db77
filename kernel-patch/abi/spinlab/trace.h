// spinlab/trace.h: trace sessions (the guest's kernel logger, organised as Windows' ETW logger is,
// with Windows' kernel event groups): session
// parameters, the trace area of the shared region, per-CPU trace buffers, the event header, the
// fixed payload of every event type, the loss counters, and the trace file the host writes.
//
// Shared ABI: the kernel writes it, the collector drains it, the decoders read it. Fixed-width,
// naturally aligned, pointer-free, checked by static_asserts.
//
// A session is started, queried and stopped with SystemPerformanceTraceInformation (0x1F),
// sub-class kSpinlabTraceSession (TraceSessionInformation below), through the one sysinfo
// handler: from a guest program (system call) or from the host (channel). Starting and stopping
// need privilege.
//
// The trace area (section RegionSection::kTrace of shm.h), laid out by the guest at each start:
//
//  trace.offset
//  +-----------------+-------------------+--- ... ---+-------------------+--------------------------+
//  | TraceAreaHeader | TraceCpuControl 0 |  cpu k    | slot tables:      | buffers: cpu 0 slot      |
//  |  (one page)     | (256 bytes each)  |           | cpu 0, cpu 1, ... | 0..n-1, cpu 1 ...        |
//  +-----------------+-------------------+--- ... ---+-------------------+--------------------------+
//   n = buffers_per_cpu (the slots the start reserved: MaximumBuffers, or fewer when fewer fit)
//   slot table of cpu k: n uint32_t at slots_offset + 4 * k * n; entry s % n = the slot of buffer s
//   slot i of cpu k at buffers_offset + (k * n + i) * buffer_size (from trace.offset)
//
// Buffers grow on demand (as ETW's logger commits MinimumBuffers and more only when needed): CPU
// k starts with `buffers_allocated` = MinimumBuffers slots and takes one more slot (up to n) each
// time it needs a buffer and every allocated one is in use. Only allocated slots are ever
// touched. Slots rotate: buffer p goes into the slot of buffer p - a (a = buffers_allocated; the
// slot p itself while p < a), or into the new slot a when the CPU grows; so the last a buffers
// always hold the a allocated slots, and the slot of buffer p - a is free exactly when the
// protocol below says a buffer is free.
//
// The buffer protocol (per CPU; all counters only grow during a session)
//
//   CPU k (the only writer of its buffers and      host (the drainer; the only writer of
//   slot table, interrupts off, no lock, no        `consumed` and `realtime_buffers_lost`)
//   atomic RMW)                                    ---------------------------------------------
//   -------------------------------------------   p = produced (acquire load).
//   Buffers are used in sequence order. Writing:   Buffers consumed .. p-1 are full and stay put
//   the buffer being written is number             until given back:
//   `produced`, if produced - consumed < a (or        slot = table[consumed % n] (checked < n),
//   a < n: grow); its slot goes into the table        copy it, check its header (sequence ==
//   before anything is published. An event is         consumed, cpu, session), then consumed =
//   copied in, bytes_used grows; nobody else          consumed + 1 (release): that gives the
//   looks at a buffer being written.                  slot back to the CPU.
//                                                  A buffer that fails the check, and one the
//   Full (or flushed: FlushTimer, flush, stop):     host took but could not deliver (its file
//   fill in the header (sequence, bytes_used,       write failed), is counted in
//   counts, events_lost), then produced + 1         realtime_buffers_lost.
//   (release): the buffer is queued for the host.
//                                                  Circular mode: the host never writes
//   None free (every allocated slot in use and     `consumed`; it reads buffers
//   buffers_allocated == n):                       max(overwritten, produced - n) .. produced-1
//     real-time: the event is lost: EventsLost++.  in place (dump, flush), each checked after
//     no-drop-stall: a writer whose caller had     the copy: valid iff its header says sequence
//       interrupts on waits for the host to give   s and `overwritten` (reloaded after the copy)
//       one back (with interrupts on: the CPU      is still <= s: the CPU advances it past s
//       keeps its ticks; `stalls` counts the       before it writes into that slot again. A
//       events that waited); with interrupts off   copy that fails (torn) is counted in
//       the event is lost and counted (never a     realtime_buffers_lost by the host that read
//       stall with interrupts off).                it.
//     circular: the CPU takes the oldest published
//       one back itself: overwritten + 1 (then a
//       release fence) and LogBuffersLost + 1.
//
//   Accounting, per CPU, exact once the CPU is quiescent (stopped session):
//       events_written + events_lost == events_attempted
//   and every published buffer is either taken by the host (consumed), still queued, or
//   overwritten (circular): buffers_written == consumed + queued + log_buffers_lost.
//   A writer that waited and then found the session stopped on its CPU writes nothing and counts
//   nothing: the event falls outside the session's window.
//
// Session control (the TraceAreaHeader): the guest CPU that starts or stops a session bumps
// `seq` to odd, changes the header, bumps it to even (release). A host reader copies the
// header between two reads of seq, as for the ClockArea (shm.h). session_id changes at every
// start, so a drainer never mixes two sessions.
//
// Versioning: kTraceAbiVersion changes whenever anything in this file changes incompatibly.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <spinlab/enum_names.h>

namespace spinlab {

inline constexpr uint32_t kTraceAbiVersion = 2;  // 2: slot tables, buffers grow on demand

// --- session parameters (the fields of ETW's logger context, WMI_LOGGER_CONTEXT) --------------

// Sub-class of SystemPerformanceTraceInformation (0x1F) for sessions. Windows' sub-classes are
// below 0x40; spinlab's own live at 0x5300.. as its information classes do.
inline constexpr uint32_t kSpinlabTraceSession = 0x5301;

// LoggerMode (one table of values and names: spinlab/enum_names.h).
#define SPINLAB_TRACE_LOGGER_MODES(X)                                                        \
    /* the host drains continuously; no free buffer: the event is lost */                    \
    X(kRealTime, 0, "real-time")                                                             \
    /* flight recorder: the oldest buffers are overwritten; dumped on demand */              \
    X(kCircular, 1, "circular")                                                              \
    /* blocking: a writer with interrupts on waits for a free buffer; with interrupts off */ \
    /* the event is lost and counted */                                                     \
    X(kNoDropStall, 2, "no-drop-stall")
SPINLAB_DENSE_ENUM(TraceLoggerMode, uint32_t, SPINLAB_TRACE_LOGGER_MODES, kTraceLoggerModeNames,
                   trace_logger_mode_name);
inline constexpr uint32_t kTraceLoggerModeCount = enum_count(kTraceLoggerModeNames);

// Enable flags: the group mask of the session (the kernel event groups of Windows' core OS
// instrumentation: context switch, ready thread, system calls, sampled profile, ...).
inline constexpr uint32_t kTraceGroupSpinlock = 1u << 0;       // sampled spinlock events
inline constexpr uint32_t kTraceGroupContextSwitch = 1u << 1;  // context switch
inline constexpr uint32_t kTraceGroupReadyThread = 1u << 2;    // who readied whom
inline constexpr uint32_t kTraceGroupSyscall = 1u << 3;        // system call enter and exit
inline constexpr uint32_t kTraceGroupProfile = 1u << 4;        // sampled profile (timer)
inline constexpr uint32_t kTraceGroupProcessThread = 1u << 5;  // process/thread start, end, rundown
inline constexpr uint32_t kTraceGroupMemory = 1u << 6;         // memory map and unmap
inline constexpr uint32_t kTraceGroupLongWait = 1u << 7;       // every wait >= long-wait=, unsampled
inline constexpr uint32_t kTraceGroupAll = (1u << 8) - 1;
inline constexpr uint32_t kTraceGroupCount = 8;

// The group of bit i (1u << i) as the tools spell it (--enable, [trace] enable, dumps).
constexpr const char* trace_group_name(uint32_t bit) {
    constexpr const char* names[kTraceGroupCount] = {"spinlock", "cswitch", "ready",  "syscall",
                                                     "profile",  "process", "memory", "long-wait"};
    return bit < kTraceGroupCount ? names[bit] : "invalid";
}

// A group's name before it was renamed, which the parsers of group lists still take (old specs,
// scripts): "longwait", the long-wait group's until 2026-12. nullptr for a group never renamed.
constexpr const char* trace_group_old_name(uint32_t bit) {
    return bit == 7 ? "longwait" : nullptr;
}
static_assert(kTraceGroupLongWait == 1u << 7, "trace_group_old_name names bit 7");

// Limits of the parameters (a start outside them is refused with kInvalidParameter, naming the
// field, and changes nothing).
inline constexpr uint32_t kTraceMinBufferSize = 4096;
inline constexpr uint32_t kTraceMaxBufferSize = 1u << 20;  // a multiple of 4096 in between
inline constexpr uint32_t kTraceMinBuffers = 2;            // one written, one queued
inline constexpr uint32_t kTraceMaxBuffers = 1024;         // per CPU (slot tables: uint32_t each)
inline constexpr uint32_t kTraceMaxFlushTimerMs = 60000;   // 0: publish only full buffers
inline constexpr uint32_t kTraceMaxProfileInterval = 1000; // timer ticks between samples

// TraceSessionInformation.command (set only).
enum class TraceCommand : uint32_t {
    kStart = 1,  // start with the parameters given (refused while a session runs)
    kStop = 2,   // publish every partly filled buffer, write the system configuration event, stop
    kFlush = 3,  // every CPU publishes its partly filled buffer now (the caller waits for
                 // them: each on its next timer tick); the session keeps running
};

// TraceSessionInformation.state (query).
#define SPINLAB_TRACE_STATES(X)                                                              \
    /* no session since boot */                                                              \
    X(kIdle, 0, "idle")                                                                      \
    X(kRunning, 1, "running")                                                                \
    /* the last session's buffers are still in the trace area, readable */                   \
    X(kStopped, 2, "stopped")
SPINLAB_DENSE_ENUM(TraceState, uint32_t, SPINLAB_TRACE_STATES, kTraceStateNames, trace_state_name);

// Loss counters (under ETW's names: EventsLost, BuffersWritten, ...), per CPU in TraceCpuControl
// and summed in queries.
struct TraceLossCounters {
    uint64_t events_attempted;       // events the CPU tried to write
    uint64_t events_written;         // of those, written into a buffer
    uint64_t events_lost;            // EventsLost: no free buffer (or too large); never written
    uint64_t buffers_written;        // BuffersWritten: buffers published (full or flushed)
    uint64_t log_buffers_lost;       // LogBuffersLost: published buffers overwritten unread (circular)
    uint64_t realtime_buffers_lost;  // RealTimeBuffersLost: buffers the host took but could not
                                     // deliver (bad header, torn while read in place, file
                                     // write failed)
};
static_assert(sizeof(TraceLossCounters) == 48, "ABI");

// The buffer of SystemPerformanceTraceInformation / kSpinlabTraceSession. Query: the live
// session (every field). Set (privileged): command and, for kStart, the parameters.
struct TraceSessionInformation {
    uint32_t event_trace_information_class;  // kSpinlabTraceSession
    uint32_t command;                        // TraceCommand (set); 0 in a query's answer
    // Parameters (in for kStart, out for a query):
    uint32_t buffer_size;        // BufferSize: bytes per buffer, header included
    uint32_t minimum_buffers;    // MinimumBuffers: per CPU, allocated at the start; the start
                                 // fails if fewer fit
    uint32_t maximum_buffers;    // MaximumBuffers: per CPU; the start reserves as many as fit, up
                                 // to this, and each CPU grows into them on demand
    uint32_t flush_timer_ms;     // FlushTimer: a partly filled buffer older than this is
                                 // published on its CPU's next timer tick; 0: never
    uint32_t logger_mode;        // LoggerMode: TraceLoggerMode
    uint32_t enable_flags;       // kTraceGroup* bits
    uint32_t profile_interval;   // sampled profile: one sample every this many timer ticks
    uint32_t reserved0;
    // State (out):
    uint32_t state;              // TraceState
    uint32_t buffers_per_cpu;    // slots the start reserved per CPU, MinimumBuffers..MaximumBuffers
    uint32_t cpu_count;          // CPUs with buffers
    uint32_t number_of_buffers;  // NumberOfBuffers: buffers allocated now, all CPUs together
                                 // (query; per CPU: TraceCpuControl.buffers_allocated)
    uint64_t session_id;         // changes at every start
    uint64_t start_tsc;
    uint64_t stop_tsc;           // 0 while running
    TraceLossCounters totals;    // summed over CPUs (skewed while running)
};
static_assert(sizeof(TraceSessionInformation) == 128, "ABI");
static_assert(offsetof(TraceSessionInformation, buffer_size) == 0x08, "ABI");
static_assert(offsetof(TraceSessionInformation, state) == 0x28, "ABI");
static_assert(offsetof(TraceSessionInformation, session_id) == 0x38, "ABI");
static_assert(offsetof(TraceSessionInformation, number_of_buffers) == 0x34, "ABI");
static_assert(offsetof(TraceSessionInformation, totals) == 0x50, "ABI");

// Call stacks on events (the stack-walk and stack-caching settings of Windows' kernel logger):
// sub-class kSpinlabTraceStacks of SystemPerformanceTraceInformation (0x1F). Set (privileged,
// refused while a session runs): the settings the next start uses. Query: those settings as
// clamped, and the current or last session's cache counters summed over its CPUs.
// StackFlags, StackCaching and MaxStackDepth are validated as the session parameters are (out of
// range: kInvalidParameter naming the field, nothing changes); BucketCount and CacheSize are
// clamped, never refused, as Windows' ETW stack cache does (a value out of range selects the
// nearest valid one).
inline constexpr uint32_t kSpinlabTraceStacks = 0x5302;
// Groups whose events can carry a stack: spinlock and long-wait (spinlock events), context
// switch, ready thread, system call enter/exit, profile samples.
inline constexpr uint32_t kTraceStackGroups = kTraceGroupSpinlock | kTraceGroupContextSwitch |
                                              kTraceGroupReadyThread | kTraceGroupSyscall |
                                              kTraceGroupProfile | kTraceGroupLongWait;
inline constexpr uint32_t kTraceMinBucketCount = 256, kTraceMaxBucketCount = 4096;
inline constexpr uint64_t kTraceMinStackCacheSize = 0x300000, kTraceMaxStackCacheSize = 0x3200000;

struct TraceStackInformation {
    uint32_t event_trace_information_class;  // kSpinlabTraceStacks
    uint32_t stack_flags;    // StackFlags: kTraceGroup* bits (within kTraceStackGroups) whose
                             // events get a stack; 0: none
    uint32_t caching;        // StackCaching: 1 the stack cache (references), 0 every stack inline
    uint32_t max_depth;      // MaxStackDepth: frames per stack, 1..kTraceMaxStackFrames
    uint32_t bucket_count;   // BucketCount: clamped to 256..4096 (0: 256); bucket = hash % count
    uint32_t reserved0;
    uint64_t cache_size;     // CacheSize: bytes of 32-frame pieces for all CPUs together, clamped
                             // to 3 MB..50 MB (0: 3 MB)
    // Out (query): the current or last session's counters, summed over CPUs.
    uint64_t hits;
    uint64_t misses;
    uint64_t uncached;
    uint64_t evictions;
    uint64_t definitions_written;
    uint64_t deletes_written;
    uint64_t rundowns_written;
    uint64_t walks_stopped;
};
static_assert(sizeof(TraceStackInformation) == 96, "ABI");
static_assert(offsetof(TraceStackInformation, cache_size) == 24, "ABI");
static_assert(offsetof(TraceStackInformation, hits) == 32, "ABI");

// --- the trace area in the shared region --------------------------------------------------------

inline constexpr uint64_t kTraceAreaMagic = 0x41455241434C5053ULL;  // bytes "SPLCAREA"

// At the start of the trace section. Written by the guest CPU that starts/stops (under seq).
struct TraceAreaHeader {
    uint64_t magic;            // kTraceAreaMagic
    uint64_t seq;              // odd while a start/stop changes this header
    uint32_t abi_version;      // kTraceAbiVersion
    uint32_t header_size;      // sizeof(TraceAreaHeader)
    uint32_t control_offset;   // TraceCpuControl[0], from the start of the trace section
    uint32_t control_stride;   // sizeof(TraceCpuControl)
    uint64_t buffers_offset;   // buffer 0 of CPU 0, from the start of the trace section
    uint64_t area_size;        // bytes of the trace section
    TraceSessionInformation session;  // parameters and state; totals are not kept here
    uint64_t slots_offset;     // the slot tables (buffers_per_cpu uint32_t per CPU)
    uint64_t reserved[7];
};
static_assert(offsetof(TraceAreaHeader, session) == 48, "ABI");
static_assert(offsetof(TraceAreaHeader, slots_offset) == 48 + sizeof(TraceSessionInformation), "ABI");
static_assert(sizeof(TraceAreaHeader) == 48 + sizeof(TraceSessionInformation) + 64, "ABI");
// region_layout (channel/region_header.cc) clears only the trace section's first page.
static_assert(sizeof(TraceAreaHeader) <= 4096, "the trace area's header fits in one page");

// One CPU's queue state and loss counters; two cache lines per writer so the CPU and the host
// never write the same line.
struct TraceCpuControl {
    // Written by the CPU (plain stores, `produced` with release):
    uint64_t produced;       // buffers published; the one being written is number `produced`
    uint64_t overwritten;    // circular: buffers the CPU took back itself (oldest first)
    uint64_t events_attempted;
    uint64_t events_written;
    uint64_t events_lost;        // EventsLost
    uint64_t buffers_written;    // BuffersWritten (== produced)
    uint64_t log_buffers_lost;   // LogBuffersLost
    uint64_t bytes_written;      // event bytes in published buffers
    uint64_t stalls;             // no-drop-stall: events whose writer waited for a buffer
    uint64_t stack_hits;         // the stack cache (TraceStackInformation's counters)
    uint64_t stack_misses;
    uint64_t stack_uncached;
    uint64_t stack_evictions;
    uint64_t stack_definitions_written;
    uint64_t stack_deletes_written;
    uint64_t stack_rundowns_written;
    uint64_t stack_walks_stopped;
    uint64_t buffers_allocated;  // NumberOfBuffers of this CPU: MinimumBuffers at the start,
                                 // growing on demand up to buffers_per_cpu
    uint64_t cpu_reserved[6];
    // Written by the host (release on `consumed`):
    uint64_t consumed;               // buffers taken and given back
    uint64_t realtime_buffers_lost;  // RealTimeBuffersLost
    uint64_t host_reserved[6];
};
static_assert(sizeof(TraceCpuControl) == 256, "ABI");
static_assert(offsetof(TraceCpuControl, consumed) == 192, "host part on its own cache lines");
static_assert(offsetof(TraceCpuControl, buffers_allocated) == 136, "ABI");

// At the start of every buffer. Filled in by the CPU just before it publishes the buffer.
struct TraceBufferHeader {
    uint64_t sequence;     // the CPU's buffer number in this session: 0, 1, 2, ...
    uint64_t session_id;
    uint32_t cpu;
    uint32_t bytes_used;   // header + events, <= buffer_size
    uint32_t event_count;
    uint32_t flags;        // kTraceBuffer* bits
    uint64_t first_tsc;    // of the first event (0 when empty)
    uint64_t last_tsc;     // of the last event
    uint64_t events_lost;  // the CPU's EventsLost when published: losses since the previous
                           // buffer are the difference
    uint64_t reserved;
};
static_assert(sizeof(TraceBufferHeader) == 64, "ABI");
inline constexpr uint32_t kTraceBufferFlushed = 1u << 0;  // published before it was full
inline constexpr uint32_t kTraceBufferFinal = 1u << 1;    // the CPU's last buffer of the session

// --- the user-mode logger: a thread's ring of spinlock events -------------------------------
//
// A ring-3 lock (lockbench's) writes its spinlock events without a system call, as ETW's
// user-mode logger keeps its buffers inside the process: kSysTraceRing (spinlab/syscall.h) maps
// a ring for the calling thread, and the thread fills it with plain stores. The kernel takes
// the ring's events into the stream of the CPU the thread runs on, through that CPU's writer,
// whenever the thread leaves the CPU (switch, exit), at the CPU's timer tick, before the CPU
// writes any event of its own while the thread is current (so a CPU's stream stays in time
// order: a ring-3 lock stamps its release, then writes its record, so an interrupt in those few
// instructions can write events stamped after the release before the record exists; the
// record's header then carries the CPU's last stamp, and release_tsc the release), at a session's stop,
// and when the thread asks (kTraceRingDrain: its ring is full). So the trace file and its
// formats are what they were: the events are the CPU's.
//
//   thread (ring 3, the only writer of head and   kernel (the only writer of tail and the
//   full; never writes the kernel's part)         kernel's counters; keeps its own copy of
//   ------------------------------------------    tail and never trusts the thread's part)
//   h = head, t = tail (acquire)                  -----------------------------------------
//   h - t < capacity: fill records[h % capacity]  h = head (acquire), clamped: h - tail >
//     (header: size, type, tsc = release_tsc;       capacity is a scribbled ring (the whole
//     the payload), then head = h + 1 (release)     backlog rejected, tail = h)
//   else: full + 1 (the event is lost; the        each record tail..h-1 is copied into the
//     kernel counts it so at its next take)         CPU's buffer first and checked there: size
//                                                   and type, rules the session enables, tsc
//                                                   within [session start, now] and not before
//                                                   the ring's previous event; the header's
//                                                   cpu, thread and process are the kernel's.
//                                                   Then tail = h (release).
//
// Accounting: each record taken while the CPU's session runs is one attempt of the CPU
// (events_attempted): written, or lost (no free buffer, or it failed the checks: events_lost);
// each increase of `full` is one more attempt lost (at most one per 64 clock cycles since the
// kernel last took the ring: a larger claim is a scribble, rejected, so a hostile thread cannot
// make a CPU's EventsLost say what it likes). Records taken while no session runs on the
// CPU (or whose rules the session does not enable) are `discarded`: outside the session, as an
// event of the kernel's that waited past a stop. A thread whose ring is scribbled on loses only
// its own events: nothing in the ring reaches a CPU's stream without the checks, and the host
// reads the stream with its own checks as before. Records carry no call stack (the kernel cannot
// walk a stack that has moved on): ring-3 code that wants stacks on its spinlock events uses
// kSysTraceSpinlock while CpuPerfData.trace_stack_groups says the session takes them.
inline constexpr uint32_t kTraceUserRingHeaderSize = 128;
inline constexpr uint32_t kTraceUserRingCapacity = 1024;  // records (a power of two)

struct TraceUserRing {
    // Written by the thread (the kernel reads them, and trusts neither):
    uint64_t head;   // records written; record i is at records[i % capacity]
    uint64_t full;   // events the thread could not write: the ring was full
    uint64_t thread_reserved[6];
    // Written by the kernel (the thread reads them):
    uint64_t tail;        // records the kernel took
    uint32_t capacity;    // records (kTraceUserRingCapacity)
    uint32_t record_size; // sizeof(TraceSpinlockEvent)
    uint64_t written;     // records written into a CPU's stream
    uint64_t lost;        // records and `full` events counted lost (no buffer, failed checks)
    uint64_t rejected;    // of `lost`: records that failed the checks
    uint64_t discarded;   // records taken while no session ran on the CPU
    uint64_t takes;       // times the kernel took the ring's records
    uint64_t kernel_reserved;
    // TraceSpinlockEvent records[capacity] follow
};
static_assert(sizeof(TraceUserRing) == kTraceUserRingHeaderSize, "ABI");
static_assert(offsetof(TraceUserRing, tail) == 64, "the kernel's part on its own cache line");
static_assert((kTraceUserRingCapacity & (kTraceUserRingCapacity - 1)) == 0, "ABI");

// --- events ---------------------------------------------------------------------------------

// One row per event type: X(enumerator, value, name), values 1, 2, ...; above each row, its payload.
#define SPINLAB_TRACE_EVENT_TYPES(X)                                                               \
    /* TraceSpinlockEvent (PERFINFO_LOG_TYPE_SPINLOCK) */                                          \
    X(kSpinlock, 1, "spinlock")                                                                    \
    /* TraceContextSwitchEvent */                                                                  \
    X(kContextSwitch, 2, "cswitch")                                                                \
    /* TraceReadyThreadEvent */                                                                    \
    X(kReadyThread, 3, "ready")                                                                    \
    /* TraceSyscallEnterEvent */                                                                   \
    X(kSyscallEnter, 4, "syscall-enter")                                                           \
    /* TraceSyscallExitEvent */                                                                    \
    X(kSyscallExit, 5, "syscall-exit")                                                             \
    /* TraceProfileEvent */                                                                        \
    X(kProfile, 6, "profile")                                                                      \
    /* TraceProcessEvent */                                                                        \
    X(kProcessStart, 7, "process-start")                                                           \
    /* TraceProcessEvent */                                                                        \
    X(kProcessEnd, 8, "process-end")                                                               \
    /* TraceProcessEvent: already running when the session started */                              \
    X(kProcessRundown, 9, "process-rundown")                                                       \
    /* TraceThreadEvent */                                                                         \
    X(kThreadStart, 10, "thread-start")                                                            \
    /* TraceThreadEvent */                                                                         \
    X(kThreadEnd, 11, "thread-end")                                                                \
    /* TraceThreadEvent */                                                                         \
    X(kThreadRundown, 12, "thread-rundown")                                                        \
    /* TraceMemoryEvent */                                                                         \
    X(kMemoryMap, 13, "mem-map")                                                                   \
    /* TraceMemoryEvent */                                                                         \
    X(kMemoryUnmap, 14, "mem-unmap")                                                               \
    /* TraceSystemConfigEvent: at session end */                                                   \
    X(kSystemConfig, 15, "sysconfig")                                                              \
    /* Call stacks: TraceStackEvent + nframes frames (see "call stacks" below). */                 \
    /* first use of a cached stack on this CPU: its key and frames */                              \
    X(kStackDefinition, 16, "stack-def")                                                           \
    /* the stack of the event just before it, by key (no frames) */                                \
    X(kStackReference, 17, "stack-ref")                                                            \
    /* a cached stack evicted: key and frames; the key is never used again */                      \
    X(kStackDelete, 18, "stack-delete")                                                            \
    /* a stack still cached when the session stopped: key and frames */                            \
    X(kStackRundown, 19, "stack-rundown")                                                          \
    /* the stack of the event just before it, frames inline (not cached) */                        \
    X(kStackWalk, 20, "stack-walk")                                                                \
    /* TraceStackCountersEvent: this CPU's cache at session stop */                                \
    X(kStackCacheCounters, 21, "stack-counters")
SPINLAB_ENUM(TraceEventType, uint16_t, SPINLAB_TRACE_EVENT_TYPES, kTraceEventTypeNames);
inline constexpr uint16_t kTraceEventTypeMax = 21;
static_assert(enum_count(kTraceEventTypeNames) == kTraceEventTypeMax, "event types are 1..kTraceEventTypeMax");

// Every event starts with this header; the payload of its type follows. size is a multiple of 8.
struct TraceEventHeader {
    uint16_t size;       // header + payload bytes
    uint16_t type;       // TraceEventType
    uint16_t cpu;        // the CPU that wrote it
    uint16_t flags;      // reserved, 0
    uint32_t thread_id;  // thread running when it was written (0: idle / none)
    uint32_t process_id; // its process (0: kernel)
    uint64_t tsc;        // the boot clock (clock=) when it was written
};
static_assert(sizeof(TraceEventHeader) == 24, "ABI");
static_assert(offsetof(TraceEventHeader, tsc) == 16, "ABI");

// Which sampling rule made a spinlock event (bits; several may hold at once).
inline constexpr uint8_t kTraceRuleAcquireSample = 1u << 0;  // (a) the SpinLockAcquireSampleRate-th
                                                             //     uncontended acquisition
inline constexpr uint8_t kTraceRuleContention = 1u << 1;     // (b) >= SpinLockSpinThreshold spins and
                                                             //     the SpinLockContentionSampleRate-th
inline constexpr uint8_t kTraceRuleHold = 1u << 2;           // (c) held >= SpinLockHoldThreshold cycles
inline constexpr uint8_t kTraceRuleLongWait = 1u << 3;       // waited >= long-wait= cycles (unsampled)

// TraceSpinlockEvent.flags
inline constexpr uint8_t kTraceSpinContended = 1u << 0;     // the first try failed
inline constexpr uint8_t kTraceSpinWaitOverflow = 1u << 1;  // the wait could not be measured
inline constexpr uint8_t kTraceSpinHoldOverflow = 1u << 2;  // release stamp before acquire stamp
// The guest saw the wait, not the hold (a Linux guest's slow-path probe): acquire_tsc is the
// wait's end, release_tsc == acquire_tsc (the release is not known), spin_count 0 (not counted),
// holder_cpu_start/end kNoCpu (not recorded). Only the long-wait rule makes such an event.
inline constexpr uint8_t kTraceSpinWaitOnly = 1u << 3;
// `handovers` holds the number of holds that began on the lock during the wait (the lock's own
// count, read when the wait began and when it won; 255: 255 or more). Without it (older guests,
// uncontended, a Linux guest) the byte is 0 and means nothing.
inline constexpr uint8_t kTraceSpinHandoversCounted = 1u << 4;
// With kTraceSpinHandoversCounted: no hold of a lock of this class began on the waiter's CPU
// during the wait (the CPU's own count of the class's acquisitions, LockClassPerf::acquisitions,
// did not move between the wait's start and its win). Unless holder_cpu_start is the waiter's
// CPU, that CPU then held the lock at no moment of the wait: a hand-over through it is a late
// stamp's illusion. Older guests leave the bit 0 (not known).
inline constexpr uint8_t kTraceSpinWaiterCpuTookNone = 1u << 5;

// Written at release, as Windows writes its spinlock event (payload WMI_SPINLOCK). Header tsc ==
// release_tsc for the kernel's locks and for ring-3 locks written through a thread's ring
// (TraceUserRing: the kernel takes the ring before the CPU writes any later event, so a CPU's
// events stay in time order; where an interrupt wrote later events between the release and the
// record, the header has the last of their stamps); for ring-3 locks written by a system call each
// (kSysTraceSpinlock) the header has the time the kernel wrote it, a little after release_tsc,
// for the same reason (the system call's own events come in between).
struct TraceSpinlockEvent {
    TraceEventHeader h;
    uint64_t lock_address;
    uint64_t call_site;       // where the lock was acquired
    uint64_t acquire_tsc;     // the lock was taken (uncontended: stamped right after the try)
    uint64_t release_tsc;
    uint64_t wait_cycles;     // 0 when uncontended or overflow
    uint64_t spin_count;      // failed attempts and busy reads, the first failed try included:
                              // >= 1 for every contended acquisition, 0 uncontended
    uint64_t holder_steal_ns; // steal time of the holder's vCPU during the wait (KVM), else 0
    uint64_t waiter_steal_ns; // steal time of this vCPU during the wait (KVM), else 0
    uint32_t class_id;
    uint32_t holder_cpu_start;  // holder seen when the wait began (kNoCpu: none or uncontended)
    uint32_t holder_cpu_end;    // the CPU whose release handed the lock over (kNoCpu: unknown)
    uint8_t lhp_class;          // LhpClass (perfdata.h); kUnknown when uncontended
    uint8_t rules;              // kTraceRule* bits that fired
    uint8_t flags;              // kTraceSpin* bits
    uint8_t handovers;          // with kTraceSpinHandoversCounted: holds begun during the wait
                                // (0: the holder seen at the start handed the lock over); a
                                // byte that was reserved (0) before
};
static_assert(sizeof(TraceSpinlockEvent) == 24 + 64 + 16, "ABI");
static_assert(offsetof(TraceSpinlockEvent, handovers) == 103, "ABI");
static_assert(offsetof(TraceSpinlockEvent, lock_address) == 24, "ABI");
static_assert(offsetof(TraceSpinlockEvent, class_id) == 88, "ABI");
static_assert(offsetof(TraceSpinlockEvent, rules) == 101, "ABI");

// Thread states and wait reasons of a switched-out thread.
enum class TraceThreadState : uint8_t { kRunning = 0, kReady = 1, kSleeping = 2, kZombie = 3 };
enum class TraceWaitReason : uint8_t {
    kNone = 0,       // preempted or yielded (still ready)
    kSleep = 1,      // sleep on a wait channel
    kTimedSleep = 2, // sleep with a deadline
    kJoin = 3,       // waiting for a thread to end
    kExit = 4,       // it ended
};

struct TraceContextSwitchEvent {
    TraceEventHeader h;
    uint32_t old_thread_id;
    uint32_t new_thread_id;
    uint32_t old_process_id;
    uint32_t new_process_id;
    uint8_t old_state;    // TraceThreadState
    uint8_t wait_reason;  // TraceWaitReason
    uint8_t reserved[6];
};
static_assert(sizeof(TraceContextSwitchEvent) == 24 + 24, "ABI");

struct TraceReadyThreadEvent {
    TraceEventHeader h;  // thread_id: the thread that readied (0 from an interrupt)
    uint32_t readied_thread_id;
    uint32_t readied_process_id;
};
static_assert(sizeof(TraceReadyThreadEvent) == 24 + 8, "ABI");

struct TraceSyscallEnterEvent {
    TraceEventHeader h;
    uint64_t number;
    uint64_t args[3];  // the first three arguments
};
static_assert(sizeof(TraceSyscallEnterEvent) == 24 + 32, "ABI");

struct TraceSyscallExitEvent {
    TraceEventHeader h;
    uint64_t number;
    uint64_t result;
};
static_assert(sizeof(TraceSyscallExitEvent) == 24 + 16, "ABI");

struct TraceProfileEvent {
    TraceEventHeader h;
    uint64_t instruction_pointer;  // where the timer interrupt found the CPU
    uint32_t user_mode;            // 1: ring 3
    uint32_t reserved;
};
static_assert(sizeof(TraceProfileEvent) == 24 + 16, "ABI");

inline constexpr uint32_t kTraceNameLen = 16;
struct TraceProcessEvent {
    TraceEventHeader h;
    uint32_t process_id;
    uint32_t parent_id;
    uint32_t exit_code;  // end only
    uint32_t reserved;
    char name[kTraceNameLen];  // NUL-padded
};
static_assert(sizeof(TraceProcessEvent) == 24 + 32, "ABI");

struct TraceThreadEvent {
    TraceEventHeader h;
    uint32_t thread_id;
    uint32_t process_id;
    uint32_t affinity_cpu;  // kNoCpu: any
    uint32_t reserved;
    char name[kTraceNameLen];
};
static_assert(sizeof(TraceThreadEvent) == 24 + 32, "ABI");

struct TraceMemoryEvent {
    TraceEventHeader h;
    uint64_t virtual_address;
    uint64_t length;
    uint32_t process_id;
    uint32_t flags;  // 1: writable, 2: user
};
static_assert(sizeof(TraceMemoryEvent) == 24 + 24, "ABI");

struct TraceSystemConfigEvent {
    TraceEventHeader h;
    uint32_t cpu_count;
    uint32_t lock_algorithm;    // LockAlgorithm (sysinfo.h)
    uint64_t tsc_hz;
    uint32_t clock_source;      // ClockSource
    uint32_t instrument_level;  // InstrumentLevel
    char hypervisor_signature[16];
    char build_id[40];
};
static_assert(sizeof(TraceSystemConfigEvent) == 24 + 80, "ABI");

// --- call stacks (the stack cache of Windows' kernel logger) -----------------------------------
//
// A stack is a frame-pointer walk: frames[0] is where the event was written (or, for a profile
// sample, where the timer interrupted), then each return address outward. Kernel frames come
// first, then the user part of a thread in a system call or interrupted in ring 3: addresses
// below kUserBase (512 GiB) are the kernel's, the rest the process's program.
//
// An event with a stack is followed, on its CPU and in its buffer order, by either
//   kStackWalk       the frames inline (stack caching off, or the cache could not hold it), or
//   kStackReference  a key into this CPU's stack cache, preceded by kStackDefinition the first
//                    time the stack was cached (and by kStackDelete for a stack it evicted).
// Both carry the event's type and TSC, so a reader pairs them even across lost events. Keys are
// (cpu << 56) | sequence and never reused within a session: a key resolves to exactly one stack,
// from its definition, its delete or its rundown, wherever those are in the trace; a key none of
// them names is a lost definition (never guessed). At stop each CPU writes a kStackRundown for
// every stack still cached, then kStackCacheCounters.
inline constexpr uint32_t kTraceMaxStackFrames = 256;

// TraceStackEvent.walk_end / user_end (why that part of the walk stopped).
#define SPINLAB_TRACE_STACK_ENDS(X)                                                          \
    /* the outermost frame (a zero frame pointer or return address) */                       \
    X(kEnd, 0, "end")                                                                        \
    /* MaxStackDepth frames */                                                               \
    X(kMaxDepth, 1, "max-depth")                                                             \
    /* a frame pointer outside the stack, misaligned, or not above the last */               \
    X(kBadFrame, 2, "bad-frame")                                                             \
    /* the frame could not be read (user memory unmapped) */                                 \
    X(kFault, 3, "fault")                                                                    \
    /* no such part (user_end of a kernel thread) */                                         \
    X(kNone, 4, "none")
SPINLAB_DENSE_ENUM(TraceStackEnd, uint8_t, SPINLAB_TRACE_STACK_ENDS, kTraceStackEndNames,
                   trace_stack_end_name);
// The name of a stack event's walk_end or user_end byte as it comes.
constexpr const char* trace_stack_end_name(uint8_t e) {
    return enum_name(kTraceStackEndNames, e);
}

struct TraceStackEvent {
    TraceEventHeader h;
    uint64_t key;         // cache key; 0 for kStackWalk
    uint64_t event_tsc;   // Reference, Walk: the header TSC of the event the stack belongs to
    uint16_t event_type;  // Reference, Walk: that event's type
    uint16_t depth;       // the stack's frames in all
    uint16_t nframes;     // frames in this event: depth, or 0 for a reference
    uint8_t walk_end;     // TraceStackEnd of the kernel part (Reference, Walk: of this walk)
    uint8_t user_end;     // TraceStackEnd of the user part
    // uint64_t frames[nframes] follow
};
static_assert(sizeof(TraceStackEvent) == 24 + 24, "ABI");
static_assert(offsetof(TraceStackEvent, nframes) == 44, "ABI");
// The stack types are numbered from 16 on, after the core types (1..15), in this order.
static_assert(uint16_t(TraceEventType::kStackDefinition) == 16, "ABI");
static_assert(uint16_t(TraceEventType::kStackReference) == 17, "ABI");
static_assert(uint16_t(TraceEventType::kStackDelete) == 18, "ABI");
static_assert(uint16_t(TraceEventType::kStackRundown) == 19, "ABI");
static_assert(uint16_t(TraceEventType::kStackWalk) == 20, "ABI");
static_assert(uint16_t(TraceEventType::kStackCacheCounters) == 21, "ABI");
static_assert(uint8_t(TraceStackEnd::kFault) == 3, "ABI: the same values as stackwalk::WalkEnd");

constexpr bool trace_event_has_frames(uint16_t type) {
    return type >= uint16_t(TraceEventType::kStackDefinition) &&
           type <= uint16_t(TraceEventType::kStackWalk);
}

// The stack cache's counters of one CPU, written at stop (also live in TraceCpuControl).
struct TraceStackCountersEvent {
    TraceEventHeader h;
    uint64_t hits;                 // lookups that found the stack cached
    uint64_t misses;               // lookups that cached it (a definition was due)
    uint64_t uncached;             // stacks the cache could not hold (written as kStackWalk)
    uint64_t evictions;            // stacks evicted (a delete was due)
    uint64_t definitions_written;  // kStackDefinition events written (misses - lost ones)
    uint64_t deletes_written;
    uint64_t rundowns_written;
    uint64_t walks_stopped;        // walks that met a bad frame or a fault
};
static_assert(sizeof(TraceStackCountersEvent) == 24 + 64, "ABI");

// Size of each type's fixed part (0: unknown type), for the writer and every reader. Types with
// frames (trace_event_has_frames) are this plus 8 * nframes bytes.
constexpr uint32_t trace_event_size(uint16_t type) {
    switch (static_cast<TraceEventType>(type)) {
        case TraceEventType::kSpinlock:
            return sizeof(TraceSpinlockEvent);
        case TraceEventType::kContextSwitch:
            return sizeof(TraceContextSwitchEvent);
        case TraceEventType::kReadyThread:
            return sizeof(TraceReadyThreadEvent);
        case TraceEventType::kSyscallEnter:
            return sizeof(TraceSyscallEnterEvent);
        case TraceEventType::kSyscallExit:
            return sizeof(TraceSyscallExitEvent);
        case TraceEventType::kProfile:
            return sizeof(TraceProfileEvent);
        case TraceEventType::kProcessStart:
        case TraceEventType::kProcessEnd:
        case TraceEventType::kProcessRundown:
            return sizeof(TraceProcessEvent);
        case TraceEventType::kThreadStart:
        case TraceEventType::kThreadEnd:
        case TraceEventType::kThreadRundown:
            return sizeof(TraceThreadEvent);
        case TraceEventType::kMemoryMap:
        case TraceEventType::kMemoryUnmap:
            return sizeof(TraceMemoryEvent);
        case TraceEventType::kSystemConfig:
            return sizeof(TraceSystemConfigEvent);
        case TraceEventType::kStackDefinition:
        case TraceEventType::kStackReference:
        case TraceEventType::kStackDelete:
        case TraceEventType::kStackRundown:
        case TraceEventType::kStackWalk:
            return sizeof(TraceStackEvent);
        case TraceEventType::kStackCacheCounters:
            return sizeof(TraceStackCountersEvent);
    }
    return 0;
}

// The event type's short name ("spinlock", "cswitch"); "unknown" for a type this build lacks.
constexpr const char* trace_event_type_name(uint16_t type) {
    return enum_find_name(kTraceEventTypeNames, type, "unknown");
}

// --- the trace file (written by spinlab-collect, read by `trace dump` and the decoders) ---------
//
//   TraceFileHeader, then frames until the end of the file:
//     TraceFrameHeader { magic, kind, length, crc32c of the payload } + `length` payload bytes
//   kind kTraceFrameBuffer: one whole trace buffer as published (TraceBufferHeader + events);
//   kind kTraceFrameCounters: TraceFileCounters, the per-CPU loss counters when the recording
//   ended (or the last ones read). A frame cut short by a crash is ignored by readers; every
//   whole frame before it stays readable.

inline constexpr uint64_t kTraceFileMagic = 0x454341525442504CULL;  // bytes "LPBTRACE"
inline constexpr uint32_t kTraceFrameMagic = 0x4D415246;            // bytes "FRAM"

struct TraceFileHeader {
    uint64_t magic;            // kTraceFileMagic
    uint32_t abi_version;      // kTraceAbiVersion
    uint32_t header_size;      // sizeof(TraceFileHeader)
    uint64_t tsc_hz;           // guest TSC frequency (RegionHeader.tsc_hz)
    uint32_t cpu_count;
    uint32_t reserved0;
    TraceSessionInformation session;  // the session's parameters as the guest reported them
    uint64_t reserved[4];
};
static_assert(sizeof(TraceFileHeader) == 32 + sizeof(TraceSessionInformation) + 32, "ABI");

enum class TraceFrameKind : uint32_t {
    kBuffer = 1,
    kCounters = 2,
};

struct TraceFrameHeader {
    uint32_t magic;   // kTraceFrameMagic
    uint32_t kind;    // TraceFrameKind
    uint32_t length;  // payload bytes that follow
    uint32_t crc;     // CRC-32C of the payload
};
static_assert(sizeof(TraceFrameHeader) == 16, "ABI");

// Counters frame payload: cpu_count entries.
struct TraceCpuCounters {
    uint32_t cpu;
    uint32_t reserved;
    TraceLossCounters counters;
};
static_assert(sizeof(TraceCpuCounters) == 56, "ABI");

}  // namespace spinlab
