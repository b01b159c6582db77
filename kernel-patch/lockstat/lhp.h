// lockstat/lhp.h: classifying a contended wait by lock-holder preemption (architecture.md,
// "Attributing a long wait to lock-holder preemption").
//
// Input: KVM steal time (MSR_KVM_STEAL_TIME, struct kvm_steal_time) of the holder's and the
// waiter's vCPU, sampled when the wait starts and when it ends. The host adds to `steal` the
// time a vCPU was runnable but not running, at its next entry, and sets `preempted` while a
// vCPU is off its CPU. So a vCPU lost time during the wait iff its steal grew or it was seen
// preempted at either sample. Pure functions: the kernel reads the areas, this decides.
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

namespace spinlab::lockstat {

struct StealSample {
    uint64_t steal_ns;   // kvm_steal_time.steal
    uint32_t preempted;  // kvm_steal_time.preempted (KVM_VCPU_PREEMPTED bit 0)
    uint32_t valid;      // 0: no steal time for that CPU (not registered, TCG, unknown holder)
};

constexpr bool lost_time(const StealSample& before, const StealSample& after) {
    return after.steal_ns != before.steal_ns || (before.preempted & 1) || (after.preempted & 1);
}

constexpr LhpClass lhp_class_of(bool holder_preempted, bool waiter_preempted) {
    if (holder_preempted && waiter_preempted) return LhpClass::kBoth;
    if (holder_preempted) return LhpClass::kHolderPreempted;
    if (waiter_preempted) return LhpClass::kWaiterPreempted;
    return LhpClass::kNeither;
}

// kUnknown unless all four samples are valid: without the holder's steal time we cannot say
// "neither", and the host timeline has to attribute the wait.
constexpr LhpClass classify_wait(const StealSample& holder_before, const StealSample& holder_after,
                                 const StealSample& waiter_before,
                                 const StealSample& waiter_after) {
    if (!holder_before.valid || !holder_after.valid || !waiter_before.valid || !waiter_after.valid)
        return LhpClass::kUnknown;
    return lhp_class_of(lost_time(holder_before, holder_after),
                        lost_time(waiter_before, waiter_after));
}

}  // namespace spinlab::lockstat
