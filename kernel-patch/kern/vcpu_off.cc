// kern/vcpu_off.cc: see vcpu_off.h.
#include "vcpu_off.h"

#include "kvm.h"
#include "prcb.h"
#include "region.h"
#include "spinlab/vcpu_state.h"

namespace {

// KVM_VCPU_PREEMPTED (Linux arch/x86/include/uapi/asm/kvm_para.h): bit 0 of the preempted byte.
constexpr uint32_t kKvmVcpuPreempted = 1u << 0;

bool in_range(uint32_t cpu) {
    return cpu < __atomic_load_n(&g_ncpus, __ATOMIC_RELAXED) && cpu < spinlab::kVcpuStateEntries;
}

}  // namespace

uint32_t vcpu_state_host_bits(uint32_t cpu) {
    return spinlab::vcpu_state_off_bits(region_vcpu_state(), cpu, __atomic_load_n(&g_ncpus, __ATOMIC_RELAXED));
}

uint32_t vcpu_state_publishers() {
    const spinlab::VcpuStateArea* area = region_vcpu_state();
    return area ? __atomic_load_n(&area->publishers, __ATOMIC_RELAXED) : 0;
}

bool vcpu_off(uint32_t cpu) {
    if (!in_range(cpu)) return false;
    if (vcpu_state_host_bits(cpu) != 0) return true;
    // kvm_steal answers valid = 0 without steal time (TCG, or that CPU not registered).
    const spinlab::lockstat::StealSample s = kvm_steal(cpu);
    return s.valid && (s.preempted & kKvmVcpuPreempted);
}
