// kern/kvm.h: what the kernel uses of KVM's paravirtual interface (Documentation/virt/kvm:
// cpuid.rst, msr.rst, hypercalls.rst), for lock-holder-preemption attribution and the PV lock.
//
//   detection   CPUID.1:ECX[31] says a hypervisor is present; leaf 0x40000000 gives its
//               signature in ebx,ecx,edx ("KVMKVMKVM\0\0\0" for KVM) and leaf 0x40000001 eax
//               its KVM_FEATURE_* bits: STEAL_TIME (5), PV_UNHALT (7), PV_SCHED_YIELD (13).
//   steal time  each CPU gives KVM a 64-byte aligned struct kvm_steal_time by writing its
//               physical address | 1 (enable) to MSR_KVM_STEAL_TIME (0x4b564d03). The host
//               adds to `steal` the ns the vCPU was runnable but not running and sets
//               `preempted` while it is off its CPU; `version` is a seqcount (odd while the
//               host writes), so a reader retries until it sees the same even value twice.
//   sched yield KVM_HC_SCHED_YIELD (11): vmcall (Intel) or vmmcall (AMD) with rax = 11 and
//               rbx = the APIC id of the vCPU to yield to (the lock holder's).
//   kick        KVM_HC_KICK_CPU (5), offered with KVM_FEATURE_PV_UNHALT: rax = 5, rbx = flags
//               (0), rcx = the APIC id of the vCPU to wake. KVM marks that vCPU "unhalted" and
//               wakes it from hlt even with its interrupts off; the mark stays until the vCPU
//               next halts, so a kick that arrives before the hlt makes that hlt return at once
//               (no lost wake-up). lock=pvqspin's kick (kern/spinlock.cc).
//
// Under TCG, or KVM without these features, nothing is registered: kvm_steal() answers
// valid = 0 (LHP class `unknown`, left to the host timeline) and kvm_yield_to() executes a
// pause (not hlt: a waiter inside spin_lock_irqsave has interrupts off and nothing would
// wake it; without PV unhalt + kick a halted waiter would sleep until its next timer tick).
#pragma once
#include <stdint.h>

#include "../lockstat/lhp.h"

constexpr uint32_t kKvmFeatureStealTime = 1u << 5;
constexpr uint32_t kKvmFeaturePvUnhalt = 1u << 7;
constexpr uint32_t kKvmFeaturePvSchedYield = 1u << 13;
constexpr uint32_t kMsrKvmStealTime = 0x4b564d03;
constexpr uint64_t kKvmHcSchedYield = 11;
constexpr uint64_t kKvmHcKickCpu = 5;

struct KvmInfo {
    bool hypervisor;         // CPUID.1:ECX[31]
    char signature[13];      // leaf 0x40000000 ebx,ecx,edx; "" without a hypervisor
    bool kvm;                // signature is "KVMKVMKVM"
    uint32_t features;       // leaf 0x40000001 eax when kvm, else 0
    uint32_t hints;          // leaf 0x40000001 edx when kvm, else 0
    bool amd;                // vmmcall instead of vmcall
    bool steal_time;         // steal time offered (and registered by every CPU's init)
    bool pv_sched_yield;     // KVM_HC_SCHED_YIELD offered
    bool pv_unhalt;          // KVM_HC_KICK_CPU offered (KVM_FEATURE_PV_UNHALT)
};
extern KvmInfo g_kvm;

void kvm_init();       // boot CPU, before init_cpu(): detect (cpuid only)
void kvm_init_cpu();   // every CPU, from lockstat_init_cpu(): register steal time

// That CPU's steal time now; valid = 0 when it has none (or cpu is out of range / kNoCpu).
spinlab::lockstat::StealSample kvm_steal(uint32_t cpu);

// The PV lock's yield towards the holder (see the top of this file).
void kvm_yield_to(uint32_t cpu);
uint64_t kvm_yield_count();   // hypercalls made, all CPUs (racy sum, for tests and bench)

// KVM_HC_KICK_CPU to the vCPU with that APIC id (only when g_kvm.pv_unhalt).
void kvm_kick_cpu(uint32_t apic_id);

// The page holding every CPU's kvm_steal_time (CPU i at + 64 * i), or 0 without steal time.
uint64_t kvm_steal_areas_page();
