// abi/spinlab/syscall.h: the system-call interface between guest programs and the kernel.
//
// Calling convention: `int $0x80` with the number in rax, arguments in rdi, rsi, rdx, r10, r8,
// r9 (Linux's x86-64 order); the result in rax, every other register preserved. A result >= 0
// is success; a negative result is -Error below. (Not `syscall`: the nested paravirtual KVM of
// the build machines does not enter ring 0 on it; a software interrupt works everywhere.) The system-information calls instead return an NTSTATUS (spinlab/status.h), as
// NtQuerySystemInformation does.
#pragma once
#include <stdint.h>

namespace spinlab {

enum Syscall : uint64_t {
    kSysWrite = 1,          // (fd 1|2, buf, len) -> bytes written
    kSysExit = 2,           // (code) -> does not return; ends every thread of the process
    kSysSpawn = 3,          // (path, argv[], flags) -> pid. flags: kSpawnUnprivileged
    kSysWait = 4,           // (pid, int32* exit_code) -> pid
    kSysGetpid = 5,         // () -> pid
    kSysThreadCreate = 6,   // (entry, arg, stack_top) -> tid; entry(arg) runs on stack_top
    kSysThreadJoin = 7,     // (tid) -> the thread's exit code
    kSysThreadExit = 8,     // (code) -> does not return
    kSysYield = 9,          // ()
    kSysSleep = 10,         // (microseconds)
    kSysPin = 11,           // (cpu or -1) -> 0; the calling thread runs only there
    kSysTscHz = 12,         // () -> TSC ticks per second
    kSysCpuCount = 13,      // () -> CPUs online
    kSysMapAnon = 14,       // (length) -> address of zeroed, writable pages (freed at exit)
    kSysRead = 16,          // (fd 0, buf, len) -> bytes: one console line (blocks)
    kSysCpuNumber = 17,     // () -> the CPU the caller runs on (may change right after)
    kSysPrivileged = 18,    // () -> 1 when the process is privileged, else 0
    kSysQuerySystemInformation = 19,  // (class, buf, len, uint32* return_len) -> NTSTATUS
    kSysSetSystemInformation = 20,    // (class, buf, len) -> NTSTATUS
    kSysMapLockstat = 21,   // (LockstatMapping* out) -> 0; privileged: map the per-CPU perf
                            // data (and steal time, and the host-kept vCPU state words) so
                            // ring-3 locks are counted, and see preemption, as kernel ones
    kSysTraceSpinlock = 22, // (const TraceSpinlockEvent* e) -> 0; after kSysMapLockstat: a ring-3
                            // lock's spinlock event (spinlab/trace.h), payload filled and rules
                            // decided by the caller (locktrace/sampling.h); the kernel writes the
                            // header (this CPU, thread, release_tsc) into this CPU's trace buffer.
                            // Rules of groups the CPU's session does not enable are dropped; none
                            // left: nothing written. -EINVAL: no rule given.
    kSysWordWait = 23,      // (const uint32_t* word, expected) -> 0 once woken by kSysWordWake
                            // (or spuriously: check the word again), 1 at once when *word !=
                            // expected. Futex-like: the check and the sleep are one step with
                            // respect to a wake, so a wake after the word changed is never lost.
                            // word: 4-byte aligned, in the caller's address space (kern/word_wait.h)
    kSysWordWake = 24,      // (const uint32_t* word, max) -> threads of this process woken (at
                            // most max) that wait on word; change the word first, then wake
    kSysTraceRing = 25,     // (TraceRingCommand) after kSysMapLockstat: the user-mode logger
                            // (spinlab/trace.h, TraceUserRing). kTraceRingMap -> the address of
                            // the calling thread's ring (mapped read-write at its first call, the
                            // same ring afterwards); kTraceRingDrain -> records the kernel took
                            // (call it when the ring is full). -EPERM without kSysMapLockstat.
    kSysCount
};

enum Error : int64_t {
    kErrNoSys = 1,      // no such system call
    kErrFault = 2,      // a pointer or length outside the caller's address space
    kErrInval = 3,      // an argument out of range
    kErrNoMem = 4,      // out of memory or of process/thread slots
    kErrNoEnt = 5,      // no such program (spawn) or process/thread (wait, join)
    kErrPerm = 6,       // the caller may not do this
    kErrChild = 7,      // wait: not a child of the caller
};

// kSysTraceRing's argument.
enum TraceRingCommand : uint64_t { kTraceRingMap = 0, kTraceRingDrain = 1 };

constexpr uint64_t kSpawnUnprivileged = 1;   // the new process is not privileged
constexpr int kMaxArgs = 32;                 // argv entries for spawn
constexpr int kMaxArgBytes = 4096;           // total bytes of argv strings
constexpr int kMaxPath = 128;

// The user half of every address space: programs are linked at kUserBase, the initial stack
// ends at kUserStackTop, anonymous mappings grow upwards from kUserMapBase.
constexpr uint64_t kUserBase = 0x0000008000000000ull;      // 512 GiB: PML4 slot 1 and up
constexpr uint64_t kUserMapBase = 0x0000010000000000ull;   // 1 TiB
constexpr uint64_t kUserStackTop = 0x00007ffffffff000ull;
constexpr uint64_t kUserStackSize = 256 * 1024;
constexpr uint64_t kUserLimit = 0x0000800000000000ull;     // first non-canonical address

// What kSysMapLockstat tells a workload: where each CPU's counters are mapped (read-write),
// which lock class ids are the workload's, the boot-time lock configuration, and where the
// live tracing parameters can be read (a ring-3 lock reads them there at every release).
struct LockstatMapping {
    uint64_t perf_base;          // CPU i's CpuPerfData (spinlab/perfdata.h) at
    uint64_t perf_stride;        //   perf_base + i * perf_stride
    uint64_t steal_base;         // CPU i's struct kvm_steal_time at steal_base + i * 64
                                 //   (read-only), or 0 without KVM steal time
    uint32_t cpu_count;
    uint32_t first_user_class;   // lock class id of workload class 0 ("user0")
    uint32_t user_class_count;
    uint32_t algorithm;          // spinlab::LockAlgorithm (lock=)
    uint32_t clock_source;       // spinlab::ClockSource (clock=)
    uint32_t pause;              // 1: spin loops execute pause (pause=)
    uint32_t pv_spin_bound;      // pvspin=
    uint32_t instrument_level;   // the kernel's INSTRUMENT level
    uint64_t long_wait_threshold;   // long-wait=: contended waits at least this long are long waits
    uint64_t vcpu_state_base;    // the region's VcpuStateArea (spinlab/vcpu_state.h, read-only),
                                 //   or 0 without a shared region
    uint64_t params_base;        // the kernel's live spinlock-tracing parameters (read-only; the
                                 //   four uint32 of EventTraceSpinlockInformation after its
                                 //   sub-class: spin threshold, acquire and contention sample
                                 //   rates, hold threshold), which a set changes in place
    uint32_t pvqspin_spin_bound; // pvqspin-spin=: the pvqspin queue head's spins before it halts
    uint32_t reserved32;
    uint64_t reserved[5];
};
static_assert(sizeof(LockstatMapping) == 128);
constexpr uint64_t kUserLockstatBase = 0x0000700000000000ull;  // where the mapping goes

inline const char* error_name(int64_t e) {
    switch (-e) {
    case kErrNoSys: return "ENOSYS";
    case kErrFault: return "EFAULT";
    case kErrInval: return "EINVAL";
    case kErrNoMem: return "ENOMEM";
    case kErrNoEnt: return "ENOENT";
    case kErrPerm: return "EPERM";
    case kErrChild: return "ECHILD";
    }
    return "E?";
}

}  // namespace spinlab
