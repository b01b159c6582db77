// kern/ivshmem.h: QEMU's ivshmem-plain device: host memory (a /dev/shm file on the host)
// mapped into the guest as PCI BAR 2. The kernel puts its per-CPU counters there so the host
// reads them without a request or a VM exit.
#pragma once
#include <stdint.h>

// Finds the device, assigns BAR 2 if the firmware left it unassigned (qboot does), enables
// memory decoding and maps it write-back. Returns false (and leaves *base 0) without a device.
bool ivshmem_init(uint64_t* base, uint64_t* size);
