// kern/kvm.cc: see kvm.h.
#include "kvm.h"

#include "../arch/x86.h"
#include "console.h"
#include "lockstat.h"
#include "prcb.h"

KvmInfo g_kvm;

namespace {

// struct kvm_steal_time (Linux arch/x86/include/uapi/asm/kvm_para.h): 64 bytes, 64-aligned.
struct alignas(64) KvmStealTime {
    uint64_t steal;
    uint32_t version;
    uint32_t flags;
    uint8_t preempted;
    uint8_t u8_pad[3];
    uint32_t pad[11];
};
static_assert(sizeof(KvmStealTime) == 64, "kvm_steal_time is 64 bytes");

// One per CPU, written by the host. The kernel is identity-mapped: the address is physical.
// One page of its own (64 x 64 bytes), so lockbench can map it read-only (kSysMapLockstat).
alignas(4096) KvmStealTime steal_areas[kMaxCpus];
static_assert(sizeof(steal_areas) == 4096);
bool registered[kMaxCpus];   // set by the owning CPU's init, read by every waiter
uint64_t yields[kMaxCpus];   // hypercalls made by each CPU (owner increments)

}  // namespace

void kvm_init() {
    KvmInfo k{};
    k.hypervisor = arch::cpuid(1).ecx & (1u << 31);
    const arch::CpuidRegs v = arch::cpuid(0);
    // "AuthenticAMD" / "HygonGenuine" use vmmcall; KVM would emulate either, at a cost.
    k.amd = (v.ebx == 0x68747541 || v.ebx == 0x6f677948);
    if (k.hypervisor) {
        const arch::CpuidRegs h = arch::cpuid(0x40000000);
        __builtin_memcpy(k.signature + 0, &h.ebx, 4);
        __builtin_memcpy(k.signature + 4, &h.ecx, 4);
        __builtin_memcpy(k.signature + 8, &h.edx, 4);
        k.signature[12] = '\0';
        k.kvm = __builtin_memcmp(k.signature, "KVMKVMKVM\0\0\0", 12) == 0;
        if (k.kvm && h.eax >= 0x40000001) {
            const arch::CpuidRegs f = arch::cpuid(0x40000001);
            k.features = f.eax;
            k.hints = f.edx;
        }
    }
    k.steal_time = k.features & kKvmFeatureStealTime;
    k.pv_sched_yield = k.features & kKvmFeaturePvSchedYield;
    k.pv_unhalt = k.features & kKvmFeaturePvUnhalt;
    g_kvm = k;
    kprintf("kvm: hypervisor '%s', KVM features 0x%x (steal time %s, PV sched yield %s, "
            "PV unhalt %s)\n", k.hypervisor ? k.signature : "none", k.features,
            k.steal_time ? "yes" : "no", k.pv_sched_yield ? "yes" : "no",
            k.pv_unhalt ? "yes" : "no");
}

void kvm_init_cpu() {
    if (!g_kvm.steal_time) return;
    const uint32_t cpu = cpu_number();
    __builtin_memset(&steal_areas[cpu], 0, sizeof steal_areas[cpu]);
    arch::wrmsr(kMsrKvmStealTime, uint64_t(&steal_areas[cpu]) | 1);
    __atomic_store_n(&registered[cpu], true, __ATOMIC_RELEASE);
}

spinlab::lockstat::StealSample kvm_steal(uint32_t cpu) {
    if (cpu >= kMaxCpus || !__atomic_load_n(&registered[cpu], __ATOMIC_ACQUIRE)) return {0, 0, 0};
    const KvmStealTime& st = steal_areas[cpu];
    // Seqcount read: the acquire loads keep the field reads between the two version reads
    // (on x86 plain movs; the builtins stop the compiler from moving or merging them).
    for (;;) {
        const uint32_t v1 = __atomic_load_n(&st.version, __ATOMIC_ACQUIRE);
        const uint64_t steal = __atomic_load_n(&st.steal, __ATOMIC_ACQUIRE);
        const uint8_t pre = __atomic_load_n(&st.preempted, __ATOMIC_ACQUIRE);
        const uint32_t v2 = __atomic_load_n(&st.version, __ATOMIC_ACQUIRE);
        if (v1 == v2 && !(v1 & 1)) return {steal, pre, 1};
        arch::pause();
    }
}

void kvm_yield_to(uint32_t cpu) {
    if (!g_kvm.pv_sched_yield || !g_lockcfg.pv_yield || cpu >= g_ncpus) {
        arch::pause();
        return;
    }
    Prcb* me = this_cpu();
    if (cpu == me->number) {
        arch::pause();
        return;
    }
    uint64_t ret = kKvmHcSchedYield;
    const uint64_t apic = g_prcbs[cpu].apic_id;
    if (g_kvm.amd)
        asm volatile("vmmcall" : "+a"(ret) : "b"(apic) : "memory");
    else
        asm volatile("vmcall" : "+a"(ret) : "b"(apic) : "memory");
    arch::percpu_inc(&yields[me->number]);
}

void kvm_kick_cpu(uint32_t apic_id) {
    uint64_t ret = kKvmHcKickCpu;
    const uint64_t flags = 0, apic = apic_id;
    if (g_kvm.amd)
        asm volatile("vmmcall" : "+a"(ret) : "b"(flags), "c"(apic) : "memory");
    else
        asm volatile("vmcall" : "+a"(ret) : "b"(flags), "c"(apic) : "memory");
}

uint64_t kvm_yield_count() {
    uint64_t n = 0;
    for (uint32_t i = 0; i < kMaxCpus; i++) n += __atomic_load_n(&yields[i], __ATOMIC_RELAXED);
    return n;
}

uint64_t kvm_steal_areas_page() { return g_kvm.steal_time ? uint64_t(&steal_areas[0]) : 0; }
