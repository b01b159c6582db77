/* vm-images/linux/guest/region.h: the agent's side of spinlab's shared region (the ivshmem
 * device's BAR 2, kernel-patch/abi/spinlab/shm.h), so that the host's tools read a Linux guest
 * as they read spinlab's own kernel: the region header, one CpuPerfData per CPU whose lock
 * class 0 counts the kernel's spinlock slow-path waits, and the clock publications.
 *
 * Written with the kernel's own code (channel/region_header.cc, channel/clock_area.cc,
 * lockstat/perf_record.cc): one writer of each format. C API for agent.c; region.cc. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Finds the ivshmem device (PCI 1af4:1110), maps its BAR 2 and lays the region out for `ncpus`
 * CPUs with the guest's TSC rate. 0 on success; -1 with `why` filled when there is no device or
 * it cannot hold the region. */
int region_open(int ncpus, uint64_t tsc_hz, char *why, size_t why_size);

/* CPU `cpu`'s local APIC id (/proc/cpuinfo's "apicid"): the host checks that guest CPU n is
 * QEMU's vCPU n with it. */
void region_set_apic_id(int cpu, uint32_t apic_id);

/* One slow-path wait on CPU `cpu` from `start` to `end` (guest TSC), into lock class 0:
 * acquisitions, wait_hist, the sums and lhp_count[unknown] (the agent sees no steal time). Only
 * the thread that reads CPU `cpu`'s events calls it for that CPU: one writer per CPU block. */
void region_record_wait(int cpu, uint64_t start, uint64_t end);

/* One clock publication (guest TSC read just before), as the kernel's timer tick makes one. */
void region_clock_publish(uint64_t guest_tsc, uint32_t cpu, uint32_t period_us);

/* For the control channel (channel.cc): CPU `cpu`'s CpuPerfData (null when out of range or no
 * region), the region's ChannelServerStats, the CPU count, and a reset of CPU `cpu`'s counters
 * (one class, or every class with lock_class 0xFFFFFFFF) that never races that CPU's
 * region_record_wait: both hold the CPU's lock. */
void *region_cpu_perf(int cpu);
void *region_channel_stats(void);
int region_cpus(void);
void region_reset(int cpu, uint32_t lock_class);

/* The region's trace section (the trace area of spinlab/trace.h: trace sessions, trace.cc) and
 * its size in *size; null when no region is open. */
void *region_trace(uint64_t *size);

/* The region's size and generation, for the agent's meta frame; 0 when not open. */
uint64_t region_size(void);
uint64_t region_generation(void);

#ifdef __cplusplus
}
#endif
