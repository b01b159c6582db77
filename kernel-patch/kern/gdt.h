// kern/gdt.h: segments (kernel and user code/data) and one TSS per CPU.
#pragma once
#include <stdint.h>

constexpr uint16_t kKernelCs = 0x08, kKernelDs = 0x10;
constexpr uint16_t kUserDs = 0x18 | 3, kUserCs = 0x20 | 3;  // the order sysret requires

void gdt_init_cpu();   // every CPU: load the shared GDT, its TSS (with a double-fault stack)
