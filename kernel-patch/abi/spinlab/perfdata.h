// spinlab/perfdata.h: the per-CPU spinlock perf data, the guest's equivalent of the
// PRCB->SpinLockPerfData array the original WRK experiment hung off each Windows PRCB.
//
// Shared ABI. One CpuPerfData per CPU; the kernel hangs it off the PRCB and places it in the
// shared-memory region (ivshmem) the host maps, so the layout is fixed-width, naturally
// aligned, pointer-free and checked by static_asserts below.
//
// Concurrency protocol (who writes what):
//
//   owning CPU (irqs off, inside its own spin_lock/spin_unlock)      any reader (other CPU, host)
//   ----------------------------------------------------------      ----------------------------
//   counter = counter + n   (one aligned 64-bit load and store,     plain aligned 64-bit loads;
//                            never torn; no lock prefix)            fields may be skewed against
//                                                                   each other by the records in
//                                                                   flight, never torn
//
// - Every field of CpuPerfData is written only by the CPU that owns it, with interrupts off,
//   so records never interleave on one CPU. Nobody else writes it; a reset runs on the owning
//   CPU (the kernel sends it there) or while the CPU is quiescent.
// - A reader copying a LockClassPerf while its owner records sees each field whole but the
//   fields of a record in flight may not yet agree: readers accept that skew. Once the owner
//   is quiescent, for every class:
//       uncontended + sum(wait_hist) + wait_overflow == acquisitions
//       sum(hold_hist) + hold_overflow == holds_timed
// - Booted with timing=all (CpuPerfData::timing), every acquisition is timed and lands in
//   wait_hist (or wait_overflow), first-try wins included, which then are not `uncontended`:
//   the invariants below hold as they are (lockstat/timing.h).
// - Long waits are not kept here: each one is a trace event (spinlab/trace.h, the long-wait
//   group), so none is overwritten unread.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <spinlab/enum_names.h>

namespace spinlab {

constexpr uint32_t kPerfDataMagic = 0x44504c53;  // "SLPD" little-endian
constexpr uint32_t kPerfDataVersion = 4;  // 2: the long-wait ring went; 3: PvLockCounters; 4: HaltLog

// Lock classes are small integers 0..kMaxLockClasses-1 given to each named kernel lock and
// to the workload's locks (the class table is queried with kSpinlabLockClassTable).
constexpr uint32_t kMaxLockClasses = 32;

// Bucket k counts values v with most-significant-bit index k, i.e. v in [2^k, 2^(k+1)),
// as x86's `bsr` gives it. A value of 0 (no msb) is counted in bucket 0, which thus holds [0, 2).
constexpr uint32_t kHistBuckets = 64;

// Lock-holder-preemption class of one contended acquisition (see architecture.md,
// "Attributing a long wait"). Decided from KVM steal time seen during the wait. The one table
// of its values and names (spinlab/enum_names.h):
#define SPINLAB_LHP_CLASSES(X)                                                               \
    /* steal time present, neither vCPU lost time during the wait */                         \
    X(kNeither, 0, "neither")                                                                \
    /* the holder's vCPU was preempted during the wait (LHP proper) */                       \
    X(kHolderPreempted, 1, "holder-preempted")                                               \
    /* the waiter's own vCPU lost time (lock-waiter preemption) */                           \
    X(kWaiterPreempted, 2, "waiter-preempted")                                               \
    /* both of the above */                                                                  \
    X(kBoth, 3, "both")                                                                      \
    /* no steal time (TCG, bare metal): the host timeline must decide */                     \
    X(kUnknown, 4, "unknown")
SPINLAB_DENSE_ENUM(LhpClass, uint32_t, SPINLAB_LHP_CLASSES, kLhpClassNames, lhp_class_name);
constexpr uint32_t kLhpClassCount = enum_count(kLhpClassNames);
static_assert(kLhpClassCount == 5, "ABI: LockClassPerf holds one lhp_count per class");

// One lock class on one CPU. All cycle values are TSC cycles of the clock the kernel was
// booted with (clock=, see SystemConfiguration). Written only by the owning CPU.
struct LockClassPerf {
    // Every acquisition of a lock of this class on this CPU, contended or not.
    uint64_t acquisitions;
    // Acquisitions whose first attempt won. No timestamp was taken for them.
    uint64_t uncontended;
    // Contended acquisitions whose wait could not be measured (the TSC went backwards, e.g. a
    // migrated or unsynchronised clock). Counted here instead of in wait_hist, never dropped.
    uint64_t wait_overflow;
    // Sum and maximum of the measured contended waits (overflows excluded).
    uint64_t wait_cycles_sum;
    uint64_t wait_cycles_max;
    // Holds that were timed (every contended acquisition, and every
    // SpinLockAcquireSampleRate-th uncontended one); full instrumentation only.
    uint64_t holds_timed;
    uint64_t hold_overflow;  // timed holds whose end stamp was before their start
    uint64_t hold_cycles_sum;
    uint64_t hold_cycles_max;
    // Timed holds longer than SpinLockHoldThreshold cycles.
    uint64_t long_holds;
    // Contended acquisitions per LhpClass (index = LhpClass) and their summed wait cycles.
    // sum(lhp_count) == acquisitions - uncontended.
    uint64_t lhp_count[kLhpClassCount];
    uint64_t lhp_cycles[kLhpClassCount];
    uint64_t reserved[4];
    // Contended wait cycles and timed hold cycles, log2 buckets (see kHistBuckets).
    uint64_t wait_hist[kHistBuckets];
    uint64_t hold_hist[kHistBuckets];
};
static_assert(sizeof(LockClassPerf) == 1216, "LockClassPerf layout is ABI");
static_assert(sizeof(LockClassPerf) % 64 == 0, "one class record is whole cache lines");
static_assert(offsetof(LockClassPerf, acquisitions) == 0x00, "ABI");
static_assert(offsetof(LockClassPerf, uncontended) == 0x08, "ABI");
static_assert(offsetof(LockClassPerf, wait_overflow) == 0x10, "ABI");
static_assert(offsetof(LockClassPerf, holds_timed) == 0x28, "ABI");
static_assert(offsetof(LockClassPerf, long_holds) == 0x48, "ABI");
static_assert(offsetof(LockClassPerf, lhp_count) == 0x50, "ABI");
static_assert(offsetof(LockClassPerf, lhp_cycles) == 0x78, "ABI");
static_assert(offsetof(LockClassPerf, wait_hist) == 0xC0, "ABI");
static_assert(offsetof(LockClassPerf, hold_hist) == 0x2C0, "ABI");

constexpr uint32_t kNoCpu = 0xFFFFFFFF;  // a CPU field that names none

// What a CPU's `acquisitions` count (CpuPerfData::acquisitions_counted), so that every reader
// says what its percentages are of. spinlab's kernel counts every acquisition, a first-try win
// as `uncontended`. A probe on another kernel's slow path (the Linux guest agent,
// vm-images/linux/) sees only the acquisitions that waited: there `uncontended` is 0 because
// nothing was counted, not because nothing won at once, and a wait table is of contended
// acquisitions only.
#define SPINLAB_ACQUISITIONS_COUNTED(X)                                                      \
    /* every acquisition, contended or not (spinlab's kernel and ring-3 locks) */            \
    X(kEveryAcquisition, 0, "every")                                                         \
    /* contended (slow-path) acquisitions only; first-try wins are not seen */              \
    X(kContendedOnly, 1, "contended-only")
SPINLAB_DENSE_ENUM(AcquisitionsCounted, uint32_t, SPINLAB_ACQUISITIONS_COUNTED,
                   kAcquisitionsCountedNames, acquisitions_counted_name);

// What the paravirtual queued spinlock (lock=pvqspin, spinlock/pv_qspinlock.h) did on one CPU,
// for every lock of every class (kernel locks, and ring-3 locks that count here). The same
// names in the ABI, the collector's JSON and the report's Python. Each is bumped by its CPU with
// one `add` to memory (no lock prefix: atomic against that CPU's own interrupts, and no other
// CPU writes it). Counted at INSTRUMENT=1 and 2; always 0 at INSTRUMENT=0 and under other locks.
struct PvLockCounters {
    // Times this CPU halted its vCPU waiting for a kick (pv_wait): a queued waiter behind a
    // running-out bound or a preempted predecessor, or the queue head after its spin bound.
    uint64_t pv_halts;
    // Kicks this CPU sent (pv_kick: KVM_HC_KICK_CPU, or an NMI): a release that found the lock
    // word marked slow, or a hand-over of the queue head to a halted waiter.
    uint64_t pv_kicks;
    // Halts that ended with nothing changed: not kicked, still waiting (a timer interrupt
    // woke a waiter that halted with interrupts on, or a kick meant for an earlier wait).
    uint64_t pv_spurious_wakeups;
    // Acquisitions by a waiter's one attempt before it queues, taken while others were queued
    // (the lock's unfairness: it went past the queue).
    uint64_t pv_steals;
    uint64_t reserved[4];
};
static_assert(sizeof(PvLockCounters) == 64, "PvLockCounters is one cache line");
static_assert(offsetof(PvLockCounters, pv_halts) == 0x00, "ABI");
static_assert(offsetof(PvLockCounters, pv_kicks) == 0x08, "ABI");
static_assert(offsetof(PvLockCounters, pv_spurious_wakeups) == 0x10, "ABI");
static_assert(offsetof(PvLockCounters, pv_steals) == 0x18, "ABI");

// The owning CPU's halts: every `hlt` it executes to wait (the scheduler's idle loop, and a
// waiter of lock=pvqspin that halts for its kick) as the span of guest TSC around it, in a ring
// the host drains (collector/halt_log.h). The host tells from it a vCPU thread that slept
// because its guest halted from one that blocked inside the hypervisor (under TCG, QEMU's
// locks) while its guest had work: the timeline sees both as a thread asleep.
//
// One writer, the owning CPU, with interrupts off (an NMI handler writes nothing here):
//   1. halted_since = enter TSC (read just before the hlt; the store is relaxed);
//   2. after the hlt: spans[written % kHaltLogSpans] = {enter, exit TSC}, then written + 1
//      with a release store, then halted_since = 0.
// A reader copies `written` (acquire), the spans it has not read, then `written` again: span n
// is whole if n + kHaltLogSpans > the second `written` (the writer may be overwriting span
// `written` - kHaltLogSpans), else it was lost. A halt still in progress shows as halted_since.
// The spans' enter TSCs never go backwards, and each exit is at or after its enter and at or
// before the next enter; a reader checks this (the guest is not trusted).
inline constexpr uint32_t kHaltLogSpans = 512;  // a power of two
static_assert((kHaltLogSpans & (kHaltLogSpans - 1)) == 0, "the ring's index is written % kHaltLogSpans");
struct HaltSpan {
    uint64_t enter_tsc;  // read just before the hlt
    uint64_t exit_tsc;   // read just after it returned (the waking interrupt's handler included)
};
struct HaltLog {
    // 1: this CPU logs its halts (spinlab's kernel at INSTRUMENT=1 and 2, set at its init);
    // 0: it does not (INSTRUMENT=0, or a Linux guest's agent, which cannot see its halts), so
    // the host knows nothing of them. A word that was zero in older layouts.
    uint32_t recording;
    uint32_t reserved0;
    uint64_t written;       // spans written since the region was laid out
    uint64_t halted_since;  // the enter TSC of the halt in progress; 0: not halted
    uint64_t reserved[5];
    HaltSpan spans[kHaltLogSpans];
};
static_assert(sizeof(HaltSpan) == 16, "ABI");
static_assert(sizeof(HaltLog) == 64 + 16 * kHaltLogSpans, "HaltLog layout is ABI");
static_assert(offsetof(HaltLog, written) == 8 && offsetof(HaltLog, halted_since) == 16 &&
                  offsetof(HaltLog, spans) == 64, "ABI");

// Everything one CPU records. 64-byte aligned in the shared region.
struct CpuPerfData {
    uint32_t magic;    // kPerfDataMagic once initialised by the owning CPU's init
    uint32_t version;  // kPerfDataVersion
    uint32_t cpu;      // the owning CPU's number
    uint32_t size;     // sizeof(CpuPerfData), so a reader can check the layout it expects
    // Sampler state (owning CPU): uncontended acquisitions left until the next one whose hold
    // is timed; reloaded with SpinLockAcquireSampleRate when it reaches zero.
    uint32_t acquire_sample_countdown;
    // The owning CPU's local APIC id (from the MADT; QEMU's x86 CPU property "apic-id"): the
    // host checks with it that guest CPU n is QEMU's vCPU n, whose thread the timeline follows.
    uint32_t apic_id;
    uint64_t resets;  // how many times these counters were reset (readers spot a reset)
    // Enable flags (spinlab/trace.h kTraceGroup*) of the trace session armed on this CPU, 0
    // when none: written by the owning CPU when it arms and disarms, read by ring-3 lock code
    // (lockbench) to know whether its holds are to be traced (its ring, TraceUserRing, or
    // kSysTraceSpinlock).
    uint32_t trace_groups;
    // What the kernel's locks time (timing=, lockstat/timing.h): 0 contended acquisitions only,
    // 1 every acquisition. Written by the owning CPU at its init, constant afterwards; read by
    // ring-3 lock code (lockbench), which must time as the kernel does.
    uint32_t timing;
    // The groups of the armed session whose events get a call stack (TraceStackInformation's
    // StackFlags), 0 when none: written with trace_groups. Ring-3 lock code writes its spinlock
    // events through its ring (TraceUserRing) unless a stack is wanted for them.
    uint32_t trace_stack_groups;
    // What `acquisitions` counts (AcquisitionsCounted): 0, every acquisition, for spinlab's
    // kernel (a word that was reserved, so older regions read as 0); kContendedOnly where only
    // slow-path waits are seen. Written at init by whoever fills the block, constant afterwards.
    uint32_t acquisitions_counted;
    uint64_t reserved[2];
    LockClassPerf classes[kMaxLockClasses];
    PvLockCounters pv;  // lock=pvqspin's halts, kicks, spurious wake-ups and steals
    HaltLog halts;      // every halt's span, for the host to drain (perf version 4)
};
static_assert(offsetof(CpuPerfData, acquire_sample_countdown) == 16, "ABI");
static_assert(offsetof(CpuPerfData, apic_id) == 20, "ABI");
static_assert(offsetof(CpuPerfData, resets) == 24, "ABI");
static_assert(offsetof(CpuPerfData, trace_groups) == 32, "ABI");
static_assert(offsetof(CpuPerfData, timing) == 36, "ABI");
static_assert(offsetof(CpuPerfData, trace_stack_groups) == 40, "ABI");
static_assert(offsetof(CpuPerfData, acquisitions_counted) == 44, "ABI");
static_assert(offsetof(CpuPerfData, classes) == 64, "ABI");
static_assert(offsetof(CpuPerfData, pv) == 64 + 1216 * kMaxLockClasses, "ABI");
static_assert(offsetof(CpuPerfData, halts) == 64 + 1216 * kMaxLockClasses + 64, "ABI");
static_assert(sizeof(CpuPerfData) == 64 + 1216 * kMaxLockClasses + 64 + sizeof(HaltLog),
              "CpuPerfData layout is ABI");
static_assert(sizeof(CpuPerfData) % 64 == 0, "per-CPU blocks stay cache-line aligned");

}  // namespace spinlab
