// kern/lockstat.cc: boot configuration and per-CPU perf data (see lockstat.h).
#include "lockstat.h"

#include "../lockstat/perf_record.h"
#include "console.h"
#include "kvm.h"
#include "lockclass.h"
#include "mem.h"
#include "proc.h"
#include "region.h"
#include "spinlab/vcpu_state.h"
#include "spinlab/syscall.h"
#include "spinlock.h"
#include "address_space.h"

LockConfig g_lockcfg = {spinlab::LockAlgorithm::kTestAndSet, spinlab::ClockSource::kLfenceRdtsc,
                        true, kDefaultPvSpinBound, kDefaultLockupCycles, spinlab::kDefaultLongWaitThreshold, true,
                        false, kDefaultPvqspinSpinBound, false};
SpinlockParamsPage g_spinlock_params = {spinlab::lockstat::kDefaultSpinlockParams};
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
    // As the original WRK experiment's ExpInitializeExecutive step: zero it all, stamp the header.
    spinlab::lockstat::init_cpu_perf(*p, cpu, g_spinlock_params.acquire_sample_rate);
    p->apic_id = c->apic_id;
    p->timing = g_lockcfg.time_all ? 1 : 0;  // ring-3 locks time as the kernel's (timing.h)
    // Its halts are logged (halt_log_begin) unless instrumentation is compiled out.
    p->halts.recording = spinlab::lockstat::kBuildLevel != spinlab::InstrumentLevel::kOff ? 1 : 0;
    // Publish with interrupts off: a lock taken by an interrupt handler here either records
    // into the scratch block or into the new one, never half in each.
    uint64_t f = irq_save();
    c->lockstat = p;
    irq_restore(f);
    __atomic_store_n(&g_lockstat_cpus[cpu], p, __ATOMIC_RELEASE);
}

// One mapping per process, made by its first caller: every CPU's perf data read-write, then
// the steal-time page read-only, then the page(s) holding the region's vCPU state area
// read-only (the words the host keeps: vcpu_off() for ring-3 locks), at kUserLockstatBase;
// and the page of the live tracing parameters read-only just below it (params_page.h).
namespace {
// The user address of the first page of the vCPU state area: after the steal-time page.
uint64_t vcpu_state_page(uint64_t perf_base, uint64_t stride) { return perf_base + kMaxCpus * stride + 4096; }
}  // namespace

int64_t lockstat_map_into(Process* p, uint64_t uout) {
    using namespace spinlab;
    constexpr uint64_t kStride = (sizeof(CpuPerfData) + 4095) & ~4095ull;
    LockstatMapping m{};
    m.perf_base = kUserLockstatBase;
    m.perf_stride = kStride;
    m.cpu_count = g_ncpus;
    m.first_user_class = kFirstUserLockClass;
    m.user_class_count = kUserLockClassCount;
    m.algorithm = uint32_t(g_lockcfg.algorithm);
    m.clock_source = uint32_t(g_lockcfg.clock);
    m.pause = g_lockcfg.pause ? 1 : 0;
    m.pv_spin_bound = g_lockcfg.pv_spin_bound;
    m.pvqspin_spin_bound = g_lockcfg.pvqspin_spin_bound;
    m.instrument_level = uint32_t(lockstat::kBuildLevel);
    m.long_wait_threshold = g_lockcfg.long_wait_threshold;
    SpinGuard g(&g_proc_lock);  // lock order: proc_table, then address_space (as_map_shared)
    if (!p->lockstat_mapped) {
        for (uint32_t i = 0; i < g_ncpus; i++) {
            uint64_t pa = uint64_t(g_lockstat_cpus[i]);
            if (!pa || (pa & 4095) || !as_map_shared(p->as, m.perf_base + i * kStride, pa, kStride, true))
                return -kErrNoMem;
        }
        if (!as_map_shared(p->as, kParamsPageUser, uint64_t(&g_spinlock_params), 4096, false)) return -kErrNoMem;
        if (uint64_t st = kvm_steal_areas_page())
            if (!as_map_shared(p->as, m.perf_base + kMaxCpus * kStride, st, 4096, false)) return -kErrNoMem;
        if (const VcpuStateArea* vs = region_vcpu_state()) {
            const uint64_t pa = uint64_t(vs), page = pa & ~4095ull;
            const uint64_t end = (pa + sizeof(VcpuStateArea) + 4095) & ~4095ull;
            if (!as_map_shared(p->as, vcpu_state_page(m.perf_base, kStride), page, end - page, false))
                return -kErrNoMem;
        }
        p->lockstat_mapped = true;
    }
    m.params_base = kParamsPageUser;
    if (kvm_steal_areas_page()) m.steal_base = m.perf_base + kMaxCpus * kStride;
    if (const VcpuStateArea* vs = region_vcpu_state())
        m.vcpu_state_base = vcpu_state_page(m.perf_base, kStride) + (uint64_t(vs) & 4095);
    if (int64_t r = copy_to_user(p->as, uout, &m, sizeof m)) return r;
    return 0;
}
