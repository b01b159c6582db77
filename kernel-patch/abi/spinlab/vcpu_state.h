// spinlab/vcpu_state.h: the vCPU state area of the shared region (spinlab/shm.h, section
// RegionSection::kVcpuState): one word per vCPU saying whether its host thread is off its host
// CPU, kept by the HOST and read by the guest (vcpu_off(), kern/vcpu_off.h). Apart
// from the trace area's `consumed` counters it is the only part of the region the host writes.
//
// Who writes what                                How it is read
// ---------------------------------------------  ---------------------------------------------
// The guest lays the area out (zeroed) with the   The guest: one relaxed 32-bit load of
//  rest of the region at boot, and never writes    cpu[k].off, k checked below its CPU count and
//  it afterwards.                                  kRegionMaxCpus; only the kVcpuOff* bits count
// Host writers (spinlab-load, hypervisor-hooks/    (a word with other bits only reads "running").
//  vcpu_state_writer.h), each owning some bits     No seqcount: each word is whole, and a reader
//  of every word: a 32-bit atomic or/and of its    acts on one word at a time.
//  own bits in `off`, then +1 on `changes`;
//  its kVcpuStatePublisher* bit in `publishers`    The host never reads the area back except
//  while it runs (set again after every guest     through its own atomic or/and (which it does
//  reboot: the guest re-lays and zeroes the        not interpret): everything in it is guest
//  area, the host sees the new generation and      memory, docs/architecture.md "What the host
//  writes its bits again).                         trusts".
//
// The host writes a word AFTER the switch it reports, not in it: the latency from the switch
// (its perf switch record's time) or the freeze to the store is measured (`make bench`,
// build/bench/vcpu-state.json; hypervisor-hooks/README.md).
//
// Freestanding: the kernel, guest programs and host tools include it.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

// Bits of VcpuStateEntry::off. Any of them set: the vCPU cannot run guest code now.
inline constexpr uint32_t kVcpuOffPreempted = 1u << 0;  // switched out still runnable: the host
                                                        // scheduler took its CPU (switch records)
inline constexpr uint32_t kVcpuOffBlocked = 1u << 1;    // switched out not runnable: slept or
                                                        // waited in the host (a guest HLT, a QEMU
                                                        // lock, the freezer) (switch records)
inline constexpr uint32_t kVcpuOffFrozen = 1u << 2;     // frozen by spinlab-load freeze, from
                                                        // its freeze mark to its thaw
inline constexpr uint32_t kVcpuOffMask = kVcpuOffPreempted | kVcpuOffBlocked | kVcpuOffFrozen;

// Bits of VcpuStateArea::publishers: which host writers keep the area now.
inline constexpr uint32_t kVcpuStatePublisherSwitches = 1u << 0;  // spinlab-load timeline
inline constexpr uint32_t kVcpuStatePublisherFreezes = 1u << 1;   // spinlab-load freeze

struct VcpuStateEntry {
    uint32_t off;      // kVcpuOff* bits; 0: on a host CPU, as far as every host writer knows
    uint32_t changes;  // +1 per store by a host writer (wraps): a diagnostic, never a bound
};
static_assert(sizeof(VcpuStateEntry) == 8, "ABI");

// The whole section: a small header, then one entry per possible vCPU (kRegionMaxCpus of
// shm.h; vCPU k at cpu[k], whatever the guest's CPU count).
inline constexpr uint32_t kVcpuStateEntries = 64;
struct VcpuStateArea {
    uint32_t publishers;  // kVcpuStatePublisher* bits of the host writers attached now
    uint32_t reserved0;
    uint64_t reserved[7];
    VcpuStateEntry cpu[kVcpuStateEntries];
};
static_assert(offsetof(VcpuStateArea, cpu) == 64, "ABI: entries start on the second cache line");
static_assert(sizeof(VcpuStateArea) == 64 + 8 * kVcpuStateEntries, "ABI");

// The guest's read of one word, defensively: 0 for a missing area or a cpu at or above
// `cpu_count` (or kVcpuStateEntries), else the word's kVcpuOff* bits (any other bit ignored).
// One relaxed load: the host changes the word at any moment.
inline uint32_t vcpu_state_off_bits(const VcpuStateArea* area, uint32_t cpu, uint32_t cpu_count) {
    if (area == nullptr || cpu >= cpu_count || cpu >= kVcpuStateEntries) return 0;
    return __atomic_load_n(&area->cpu[cpu].off, __ATOMIC_RELAXED) & kVcpuOffMask;
}

}  // namespace spinlab
