// kern/region.h: the shared-memory region (spinlab/shm.h) in the ivshmem BAR: laid out at boot,
// its per-CPU perf data section handed to lockstat, the clock area published on CPU 0's tick.
#pragma once
#include <stdint.h>

#include "spinlab/shm.h"

// Boot CPU, after lapic_init (needs the TSC frequency) and before any CPU's lockstat init.
// Without an ivshmem device the kernel runs with private counters and no region.
void region_init(uint32_t cpu_count);
bool region_present();
// The per-CPU perf data section (nullptr without a region); stride in bytes.
void* region_perfdata(uint64_t* stride, uint32_t* count);
spinlab::ChannelServerStats* region_channel_stats();   // nullptr without a region
void region_clock_tick(uint32_t cpu);                   // every CPU's timer interrupt
void region_use_for_lockstat();   // hand the perf data section to lockstat (if present)
void* region_trace(uint64_t* size);  // the trace section (spinlab/trace.h), nullptr without one
// The host-written vCPU state area (spinlab/vcpu_state.h), nullptr without a region.
const spinlab::VcpuStateArea* region_vcpu_state();
