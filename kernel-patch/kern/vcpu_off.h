// kern/vcpu_off.h: is a vCPU off its host CPU right now? Linux calls this vcpu_is_preempted;
// spinlab says "off" (spinlab/vcpu_state.h) and keeps "preempted" for the one reason of being off
// that it names (kVcpuOffPreempted). For preemption-aware locks: a waiter that finds the lock
// holder (or its queue predecessor) off its CPU yields instead of spinning on a CPU that cannot
// hand it the lock.
//
// Two sources, combined with OR (either one saying "preempted" is enough):
//   - the host's word (spinlab/vcpu_state.h, the region's vCPU state area), kept by
//     spinlab-load under TCG and KVM alike: set while the vCPU thread is switched out (timeline
//     --vcpu-state: preempted, or blocked in the host: a halted vCPU's thread sleeps there too)
//     or frozen (preempt --vcpu-state). The host writes it after the switch, not in it (a poll
//     period plus its wake-up later; the latency is measured, hypervisor-hooks/README.md);
//   - under KVM with steal time, the vCPU's kvm_steal_time.preempted byte (offset 16,
//     KVM_VCPU_PREEMPTED = bit 0), which KVM sets when it schedules the vCPU thread out while
//     still runnable and clears when the vCPU next enters the guest: no latency, but blind to a
//     frozen or blocked vCPU thread (it leaves KVM_RUN first), docs/architecture.md.
// Neither source can say "running" for sure: false means no source has seen it off its CPU.
//
// Defensive: the word is host memory to the guest too. A cpu at or above the CPU count (or
// kNoCpu) answers false; only the kVcpuOff* bits count, any other bit is ignored. Without a
// region, or with no host writer, the host word reads 0 (the layout zeroed it).
//
// Safe in any context (interrupts off, holding spinlocks, the lock slow path itself): a few
// loads, no lock, no instrumentation.
#pragma once
#include <stdint.h>

bool vcpu_off(uint32_t cpu);

// For tests and diagnostics: the host word's kVcpuOff* bits of `cpu` (0 out of range or without
// a region), and the kVcpuStatePublisher* bits of the host writers attached now.
uint32_t vcpu_state_host_bits(uint32_t cpu);
uint32_t vcpu_state_publishers();
