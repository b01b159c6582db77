// kern/lockstat.h: the kernel side of the spinlock instrumentation: the boot-time
// lock configuration every spinlock reads, and the per-CPU perf data hung off the PRCB
// (prcb->lockstat, a spinlab::CpuPerfData, the guest's PRCB->SpinLockPerfData of the original WRK
// experiment, docs/architecture.md).
//
// Boot order (kern/main.cc):
//   prcb_init_cpu(n)     -> lockstat_early_cpu(): prcb->lockstat = a static scratch block, so
//                           the lock paths never test for null; what CPUs record before their
//                           own init lands there and is never reported
//   bootopts_init()      -> lockstat_configure(): lock=, clock=, pause=, lockup=, long-wait=,
//                           pvspin=, pvyield=, timing=, pvqspin-spin=, pvqspin-kick= copied into g_lockcfg. Runs while no lock is held (boot
//                           CPU, before smp_init), so switching from the static default
//                           algorithm (tas, whose free word is also a free ticket and MCS
//                           lock) is safe. Constant afterwards.
//   [lockstat_set_storage(base, size, stride)]  optional (the shared region): put the blocks in
//                           the ivshmem region, CPU i at base + i * stride. Must
//                           come before the boot CPU's init_cpu().
//   init_cpu()           -> lockstat_init_cpu() first: this CPU's block (from the storage
//                           region, else fresh zeroed pages), zeroed and stamped
//                           (lockstat::init_cpu_perf), then published in the PRCB and in
//                           g_lockstat_cpus[]. KVM steal time registration follows in
//                           init_cpu() (kvm_init_cpu, kvm.h).
#pragma once
#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stddef.h>
#include <stdint.h>

#include "../arch/x86.h"
#include "../lockstat/build_level.h"
#include "../lockstat/halt_log.h"
#include "../lockstat/params.h"
#include "params_page.h"
#include "prcb.h"

// Read by every lock path; written once by lockstat_configure() (see above).
struct LockConfig {
    spinlab::LockAlgorithm algorithm;  // lock=
    spinlab::ClockSource clock;        // clock=
    bool pause;                        // pause=on: spin loops execute pause
    uint32_t pv_spin_bound;            // pvspin=: reads of the word before the PV lock yields
    uint64_t lockup_cycles;            // lockup=: lockup detector bound, 0 = off (tests may
                                       // lower it at run time: read it whole, relaxed)
    uint64_t long_wait_threshold;         // long-wait=: waits this long are long-wait trace events
    bool pv_yield;                     // pvyield=: the pv lock may use KVM_HC_SCHED_YIELD
    bool time_all;                     // timing=all: every acquisition is timed (lockstat/timing.h)
    uint32_t pvqspin_spin_bound;       // pvqspin-spin=: spins before a pvqspin waiter halts
    bool pvqspin_nmi_kick;             // pvqspin-kick=nmi: NMI kicks even with KVM's PV unhalt
};
extern LockConfig g_lockcfg;

// SpinLock{Spin,Hold}Threshold, Acquire/ContentionSampleRate: g_spinlock_params, the live copy
// that the set call changes, in a page of its own that workloads map (params_page.h).

// CPU i's perf data once it ran lockstat_init_cpu(), else nullptr. For sysinfo and readers.
extern spinlab::CpuPerfData* g_lockstat_cpus[kMaxCpus];

constexpr uint64_t kDefaultLockupCycles = 1ull << 34;   // ~6.5 s at 2.6 GHz
constexpr uint32_t kDefaultPvSpinBound = 1u << 15;      // as Linux's pv qspinlock SPIN_THRESHOLD
constexpr uint32_t kDefaultPvqspinSpinBound = 1u << 15; // Linux's SPIN_THRESHOLD

void lockstat_early_cpu(Prcb* p);   // from prcb_init_cpu: point p->lockstat at the scratch block
void lockstat_configure(const LockConfig& c);
void lockstat_init_cpu();           // every CPU, first in init_cpu()

struct Process;
// sys_map_lockstat, its arguments checked (privileged caller, uout a user range): maps every
// CPU's perf data and the steal-time page into p and writes the LockstatMapping to uout.
// 0 or -spinlab::Error.
int64_t lockstat_map_into(Process* p, uint64_t uout);

// The shared region's hook: per-CPU blocks at base + i * stride (the region's layout, page-aligned so a
// block can be mapped into a workload); base and stride 64-byte aligned.
// Returns false (and changes nothing) if called too late or base is misaligned. A CPU whose
// block would not fit in size gets fresh pages instead (and says so on the console).
bool lockstat_set_storage(void* base, size_t size, size_t stride);
constexpr size_t lockstat_cpu_stride() { return (sizeof(spinlab::CpuPerfData) + 63) & ~size_t(63); }

inline spinlab::CpuPerfData* lockstat_this_cpu() {
    return static_cast<spinlab::CpuPerfData*>(this_cpu()->lockstat);
}

// The halt log (perfdata.h HaltLog, lockstat/halt_log.h): every hlt this CPU waits in, as the
// span of TSC around it, for the host to tell a halted guest from a vCPU blocked in the
// hypervisor. Callers have interrupts off at each call:
//   const uint64_t enter = halt_log_begin();   // just before the hlt
//   ... hlt ...
//   halt_log_end(enter);                        // after it (and the waking interrupt's handler)
// or halt_log_cancel(enter) when no hlt ran. begin returns 0, and end and cancel of 0 do
// nothing: at INSTRUMENT=0 (compiled away), before this CPU's lockstat_init_cpu (the shared
// scratch block does not record), and for a halt nested inside another's span.
inline uint64_t halt_log_begin() {
    if constexpr (spinlab::lockstat::kBuildLevel == spinlab::InstrumentLevel::kOff) return 0;
    spinlab::HaltLog& log = lockstat_this_cpu()->halts;
    if (!log.recording) return 0;
    return spinlab::lockstat::halt_log_enter(log, arch::rdtsc_lfence());
}
inline void halt_log_end(uint64_t enter) {
    if constexpr (spinlab::lockstat::kBuildLevel == spinlab::InstrumentLevel::kOff) return;
    if (enter) spinlab::lockstat::halt_log_exit(lockstat_this_cpu()->halts, enter, arch::rdtsc_lfence());
}
inline void halt_log_cancel(uint64_t enter) {
    if constexpr (spinlab::lockstat::kBuildLevel == spinlab::InstrumentLevel::kOff) return;
    spinlab::lockstat::halt_log_abandon(lockstat_this_cpu()->halts, enter);
}
