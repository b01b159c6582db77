// spinlab/sysinfo.h: information classes and buffers of the system-information calls.
//
// Shared ABI. The calls are shaped like Windows' NtQuerySystemInformation and
// NtSetSystemInformation, through which Windows sets and queries its spinlock-tracing
// parameters (EVENT_TRACE_SPINLOCK_INFORMATION):
//
//   Status query_system_information(uint32 info_class, void* buffer, uint32 length,
//                                   uint32* return_length);
//   Status set_system_information(uint32 info_class, const void* buffer, uint32 length);
//
// Inputs of a query (which CPU, which lock class) travel in the head of the buffer; the
// kernel reads them, then overwrites the buffer with the answer. Guest programs make the
// calls as system calls, the host collector sends the same class, buffer and length over
// the control channel; one handler serves both.
//
// Lengths:
// - fixed-size classes (the spinlock parameters, the configuration, reset) want
//   exactly sizeof(their struct);
// - variable-size classes (perf data, lock class table) want at least the size of their
//   answer, which depends on the request and on the running system;
// - a wrong length gives kInfoLengthMismatch and *return_length = the length needed (for a
//   variable class whose request head could not be read: the size of that head);
// - on success *return_length = the bytes written.
//
// Numbers: where Windows has the class, spinlab keeps Windows' number (0x1F, sub-class 5).
// spinlab's own classes live at 0x5300.. ('S' << 8), far above Windows' classes (< 0x100).
#pragma once

#include <spinlab/perfdata.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

constexpr uint32_t kSysinfoAbiVersion = 2;  // 2: kSpinlabLongWaits went

enum class InfoClass : uint32_t {
    // Windows' SystemPerformanceTraceInformation: the buffer starts with a uint32
    // EventTraceInformationClass that selects the sub-class (query and set).
    kSystemPerformanceTraceInformation = 0x1F,
    // Query: SpinlockPerfRequest in, SpinlockPerfReply + SpinlockPerfRecord[] out.
    kSpinlabSpinlockPerfData = 0x5301,
    // Query: LockClassTableReply + LockClassEntry[] out.
    kSpinlabLockClassTable = 0x5302,
    // Set (privileged): ResetRequest in. Zeroes counters.
    kSpinlabResetCounters = 0x5303,
    // Query: SystemConfiguration out.
    kSpinlabSystemConfiguration = 0x5304,
    // 0x5305 was kSpinlabLongWaits (the long-wait ring): long waits are trace events now.
    // Query: WorkloadInformation out. Served by a guest whose workload counts its own operations
    // (a Linux guest's agent); spinlab's kernel answers kInvalidInfoClass: its workloads'
    // operations are their lock classes' acquisitions ([workload] throughput-classes).
    kSpinlabWorkloadInformation = 0x5306,
};

// Sub-classes of kSystemPerformanceTraceInformation (Windows' EVENT_TRACE_INFORMATION_CLASS).
enum class EventTraceInformationClass : uint32_t {
    kEventTraceSpinlockInformation = 5,
};

// EVENT_TRACE_SPINLOCK_INFORMATION (Windows 6.3 layout, 0x14 bytes). Query and set.
// Windows names in the comments. All four are unsigned; each has a least permitted value,
// which is also the default the kernel boots with. A set with any field below its minimum
// is refused with kInvalidParameter and changes none of them.
struct EventTraceSpinlockInformation {
    uint32_t event_trace_information_class;  // EventTraceInformationClass: must be 5
    // SpinLockSpinThreshold: contended acquisitions with fewer spins are not traced (spins:
    // the failed first try plus the wait loop's iterations, the counter the loop keeps for the
    // lockup detector anyway; so 1 traces every contended acquisition). See spinlab/trace.h.
    uint32_t spin_threshold;
    // SpinLockAcquireSampleRate: every Nth uncontended acquisition is sampled (its hold timed,
    // and with a trace session running, traced).
    uint32_t acquire_sample_rate;
    // SpinLockContentionSampleRate: every Nth contended acquisition (of those with at least
    // SpinLockSpinThreshold spins) is traced.
    uint32_t contention_sample_rate;
    // SpinLockHoldThreshold: a timed hold longer than this many TSC cycles is a long hold.
    uint32_t hold_threshold;
};
static_assert(sizeof(EventTraceSpinlockInformation) == 0x14, "EVENT_TRACE_SPINLOCK_INFORMATION");
static_assert(offsetof(EventTraceSpinlockInformation, spin_threshold) == 0x04, "ABI");
static_assert(offsetof(EventTraceSpinlockInformation, acquire_sample_rate) == 0x08, "ABI");
static_assert(offsetof(EventTraceSpinlockInformation, contention_sample_rate) == 0x0C, "ABI");
static_assert(offsetof(EventTraceSpinlockInformation, hold_threshold) == 0x10, "ABI");

constexpr uint32_t kMinSpinThreshold = 1;
constexpr uint32_t kMinAcquireSampleRate = 1000;
constexpr uint32_t kMinContentionSampleRate = 1;
constexpr uint32_t kMinHoldThreshold = 1000000;

// "All" selectors in requests.
constexpr uint32_t kAllCpus = 0xFFFFFFFF;
constexpr uint32_t kAllLockClasses = 0xFFFFFFFF;

// SpinlockPerfRequest.flags
constexpr uint32_t kPerfMergeCpus = 1u << 0;     // one record per class, summed over CPUs
constexpr uint32_t kPerfMergeClasses = 1u << 1;  // one record per CPU, summed over classes
constexpr uint32_t kPerfKnownFlags = kPerfMergeCpus | kPerfMergeClasses;

// Head of a kSpinlabSpinlockPerfData buffer. In: cpu (a CPU number or kAllCpus), lock_class
// (a class id or kAllLockClasses), flags. The reply echoes them and fills the rest.
// Records follow in CPU-major order: for each selected CPU (or once, cpu = kAllCpus, when
// merged over CPUs), for each selected class (or once, class_id = kAllLockClasses, when merged
// over classes). "All classes" means the registered ones (see the lock class table).
struct SpinlockPerfRequest {
    uint32_t cpu;
    uint32_t lock_class;
    uint32_t flags;
    uint32_t record_count;  // out
    uint32_t record_size;   // out: sizeof(SpinlockPerfRecord)
    uint32_t reserved[3];
};
using SpinlockPerfReply = SpinlockPerfRequest;
static_assert(sizeof(SpinlockPerfRequest) == 32, "ABI");
static_assert(offsetof(SpinlockPerfRequest, flags) == 8, "ABI");
static_assert(offsetof(SpinlockPerfRequest, record_count) == 12, "ABI");

struct SpinlockPerfRecord {
    uint32_t cpu;       // CPU number, or kAllCpus when merged over CPUs
    uint32_t class_id;  // class id, or kAllLockClasses when merged over classes
    uint32_t reserved[14];
    LockClassPerf perf;
};
static_assert(sizeof(SpinlockPerfRecord) == 64 + sizeof(LockClassPerf), "ABI");
static_assert(offsetof(SpinlockPerfRecord, perf) == 64, "ABI");

// kSpinlabLockClassTable reply.
constexpr uint32_t kLockClassNameLen = 24;  // including the terminating NUL
struct LockClassEntry {
    uint32_t id;
    uint32_t lock_count;           // locks initialised with this class so far
    char name[kLockClassNameLen];  // NUL-terminated, NUL-padded
};
static_assert(sizeof(LockClassEntry) == 32, "ABI");
struct LockClassTableReply {
    uint32_t count;       // entries that follow
    uint32_t entry_size;  // sizeof(LockClassEntry)
};
static_assert(sizeof(LockClassTableReply) == 8, "ABI");

// kSpinlabResetCounters request. cpu / lock_class may be kAllCpus / kAllLockClasses.
struct ResetRequest {
    uint32_t cpu;
    uint32_t lock_class;
};
static_assert(sizeof(ResetRequest) == 8, "ABI");

// Lock algorithm, chosen at boot (lock=). Each enum below is one table of values and names
// (spinlab/enum_names.h): the one spelling of each value everywhere, the boot option, the host
// tools, the results files and the report (through the build's abi_names.json).
#define SPINLAB_LOCK_ALGORITHMS(X)                                                           \
    /* the original lock: lock bts, spin reading with pause, retry */                        \
    X(kTestAndSet, 0, "tas")                                                                 \
    /* FIFO ticket lock */                                                                   \
    X(kTicket, 1, "ticket")                                                                  \
    /* MCS-style queued lock, each waiter spins on its own node */                           \
    X(kQueued, 2, "mcs")                                                                     \
    /* bounded spin, then yield towards the holder's vCPU (KVM PV sched-yield) */            \
    X(kParavirt, 3, "pv")                                                                    \
    /* ticket lock whose waiters may skip a stalled turn (VEE'13) */                         \
    X(kPreemptableTicket, 4, "pticket")                                                      \
    /* MCS lock whose waiters yield while the vCPU ahead is preempted */                     \
    X(kParavirtQueued, 5, "pvmcs")                                                           \
    /* spinlock/student_lock.h: lab 5's lock (a plain TAS as shipped) */                     \
    X(kStudent, 6, "student")                                                                \
    /* Linux's paravirtual queued spinlock: queue, bounded spin, halt, kicked by the release */ \
    X(kPvQspinlock, 7, "pvqspin")
SPINLAB_DENSE_ENUM(LockAlgorithm, uint32_t, SPINLAB_LOCK_ALGORITHMS, kLockAlgorithmNames,
                   lock_algorithm_name);
constexpr uint32_t kLockAlgorithmCount = enum_count(kLockAlgorithmNames);

// Time source of every timestamp, chosen at boot (clock=).
#define SPINLAB_CLOCK_SOURCES(X)                                                             \
    /* default: lfence orders the read after earlier loads, no VM exit */                    \
    X(kLfenceRdtsc, 0, "lfence")                                                             \
    /* waits for earlier instructions; also returns TSC_AUX */                               \
    X(kRdtscp, 1, "rdtscp")                                                                  \
    /* the original experiment's: serialises, a VM exit in a VM */                           \
    X(kCpuidRdtsc, 2, "cpuid")
SPINLAB_DENSE_ENUM(ClockSource, uint32_t, SPINLAB_CLOCK_SOURCES, kClockSourceNames, clock_source_name);
constexpr uint32_t kClockSourceCount = enum_count(kClockSourceNames);

// What the kernel was built with (INSTRUMENT=). 1 is the default instrumented kernel.
#define SPINLAB_INSTRUMENT_LEVELS(X)                                                         \
    /* baseline: no counters at all */                                                       \
    X(kOff, 0, "off")                                                                        \
    /* counters, wait histograms, LHP classes, sampled hold timing */                        \
    X(kFull, 1, "full")                                                                      \
    /* counters, wait histograms and LHP classes; no hold timing */                          \
    X(kCounters, 2, "counters")
SPINLAB_DENSE_ENUM(InstrumentLevel, uint32_t, SPINLAB_INSTRUMENT_LEVELS, kInstrumentLevelNames,
                   instrument_level_name);

// kSpinlabSystemConfiguration reply.
constexpr uint32_t kHypervisorSignatureLen = 16;
constexpr uint32_t kBuildIdLen = 40;
// The long-wait threshold's default, in TSC cycles: the kernel's long-wait= (its long-wait trace
// events) and the report's --threshold (the waits it attributes) are both this, so a run whose spec
// does not set [vm] long-wait lists every wait the report analyses. 2^20 cycles is ~0.4 ms at
// 2.5 GHz: longer than any wait an idle host gives a lock of this kernel, shorter than a host
// time slice (docs/architecture.md, "What the numbers mean").
constexpr uint64_t kDefaultLongWaitThreshold = 1ull << 20;
struct SystemConfiguration {
    uint32_t abi_version;       // kSysinfoAbiVersion
    uint32_t cpu_count;         // CPUs online
    uint64_t tsc_hz;            // TSC frequency as calibrated by the kernel
    uint32_t lock_algorithm;    // LockAlgorithm
    uint32_t clock_source;      // ClockSource
    uint32_t instrument_level;  // InstrumentLevel
    uint32_t pause_enabled;     // 1: spin loops execute pause (pause=on)
    uint32_t max_lock_classes;  // kMaxLockClasses
    uint32_t hist_buckets;      // kHistBuckets
    uint32_t lock_class_count;  // classes registered
    uint32_t steal_time;        // 1: KVM steal time registered on every CPU (LHP classes known)
    // CPUID 0x40000000 ebx,ecx,edx as text ("KVMKVMKVM", "TCGTCGTCGTCG"), NUL-padded; empty
    // when CPUID reports no hypervisor.
    char hypervisor_signature[kHypervisorSignatureLen];
    uint32_t kvm_features;         // CPUID 0x40000001 eax (KVM_FEATURE_* bits), 0 if not KVM
    uint32_t kvm_hints;            // CPUID 0x40000001 edx
    uint64_t long_wait_threshold;  // long-wait=: waits this long are long-wait trace events
    uint64_t lockup_cycles;        // spin bound of the lockup detector; 0: detector off
    char build_id[kBuildIdLen];    // NUL-terminated (e.g. git describe)
};
static_assert(sizeof(SystemConfiguration) == 128, "ABI");
static_assert(offsetof(SystemConfiguration, tsc_hz) == 0x08, "ABI");
static_assert(offsetof(SystemConfiguration, lock_algorithm) == 0x10, "ABI");
static_assert(offsetof(SystemConfiguration, hypervisor_signature) == 0x30, "ABI");
static_assert(offsetof(SystemConfiguration, kvm_features) == 0x40, "ABI");
static_assert(offsetof(SystemConfiguration, long_wait_threshold) == 0x48, "ABI");
static_assert(offsetof(SystemConfiguration, build_id) == 0x58, "ABI");

// kSpinlabWorkloadInformation reply: the guest's workload and the operations it has completed
// since it started (a host takes the difference over a window, as it does of the counters).
constexpr uint32_t kWorkloadNameLen = 32;
struct WorkloadInformation {
    char name[kWorkloadNameLen];  // the workload ("hackbench"), NUL-terminated
    char unit[kWorkloadNameLen];  // what one operation is ("hackbench runs"), NUL-terminated
    uint64_t ops;                 // operations completed
    uint64_t failed;              // of them, those that failed (a workload process's error exit)
    uint64_t guest_tsc;           // the guest's TSC when it answered
    uint64_t reserved[5];
};
static_assert(sizeof(WorkloadInformation) == 128, "ABI");
static_assert(offsetof(WorkloadInformation, ops) == 64, "ABI");

}  // namespace spinlab
