// kern/lockstat.cc: boot configuration and per-CPU perf data (see lockstat.h).
#include "lockstat.h"

#include "../lockstat/perf_record.h"
#include "console.h"
#include "kvm.h"
#include "mem.h"

LockConfig g_lockcfg = {spinlab::LockAlgorithm::kTestAndSet, spinlab::ClockSource::kLfenceRdtsc,
                        true, kDefaultPvSpinBound, kDefaultLockupCycles, kDefaultLongWaitCycles, true};
spinlab::lockstat::SpinlockParams g_spinlock_params = spinlab::lockstat::kDefaultSpinlockParams;
spinlab::CpuPerfData* g_lockstat_cpus[kMaxCpus];

namespace {

// Where CPUs record before their own init (and, on the boot CPU, everything before
// init_cpu: early kprintf, pmm and heap setup). Shared by all CPUs and never reported, so the
// unlocked per-CPU updates racing on it only garble garbage. The long-wait threshold is
// "never", so the ring is not written.
spinlab::CpuPerfData scratch __attribute__((aligned(64)));

uint8_t* storage_base;     // lockstat_set_storage's region, or nullptr
size_t storage_size;
size_t storage_stride;
bool storage_closed;       // set by the first lockstat_init_cpu: too late to move the blocks

}  // namespace

void lockstat_early_cpu(Prcb* p) {
    // Every CPU stores the same values: harmless if two do it at once.
    __atomic_store_n(&scratch.long_waits.threshold_cycles, ~0ull, __ATOMIC_RELAXED);
    p->lockstat = &scratch;
}

void lockstat_configure(const LockConfig& c) { g_lockcfg = c; }

bool lockstat_set_storage(void* base, size_t size, size_t stride) {
    if (storage_closed || (uintptr_t(base) & 63) || stride < sizeof(spinlab::CpuPerfData) || (stride & 63))
        return false;
    storage_base = static_cast<uint8_t*>(base);
    storage_size = size;
    storage_stride = stride;
    return true;
}

void lockstat_init_cpu() {
    Prcb* c = this_cpu();
    const uint32_t cpu = c->number;
    __atomic_store_n(&storage_closed, true, __ATOMIC_RELAXED);
    spinlab::CpuPerfData* p = nullptr;
    const size_t stride = storage_stride;
    if (storage_base && (cpu + 1) * stride <= storage_size) {
        p = reinterpret_cast<spinlab::CpuPerfData*>(storage_base + cpu * stride);
    } else {
        if (storage_base) kprintf("lockstat: cpu %u's perf data does not fit the shared region\n", cpu);
        // Zeroed frames; the pmm_lock acquisition this takes is recorded in the scratch block.
        uint64_t pages = (sizeof(spinlab::CpuPerfData) + 4095) / 4096;
        p = reinterpret_cast<spinlab::CpuPerfData*>(pages_alloc(pages));
        if (!p) panic("lockstat: no memory for cpu %u's perf data", cpu);
    }
    // The seed's ExpInitializeExecutive step: zero it all, stamp the header.
    spinlab::lockstat::init_cpu_perf(*p, cpu, g_lockcfg.long_wait_cycles,
                                     g_spinlock_params.acquire_sample_rate);
    // Publish with interrupts off: a lock taken by an interrupt handler here either records
    // into the scratch block or into the new one, never half in each.
    uint64_t f = irq_save();
    c->lockstat = p;
    irq_restore(f);
    __atomic_store_n(&g_lockstat_cpus[cpu], p, __ATOMIC_RELEASE);
    kvm_init_cpu();  // register this CPU's steal time area, when KVM offers it
}
