// kern/multiboot.h: the parts of the multiboot (v1) information structure the kernel reads.
#pragma once
#include <stdint.h>

constexpr uint32_t kMultibootLoaderMagic = 0x2badb002;

struct __attribute__((packed)) MultibootInfo {
    uint32_t flags;              // which fields below are valid
    uint32_t mem_lower, mem_upper;
    uint32_t boot_device;
    uint32_t cmdline;            // flags bit 2
    uint32_t mods_count, mods_addr;  // flags bit 3
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr; // flags bit 6
};

struct __attribute__((packed)) MultibootModule {
    uint32_t start, end;         // [start, end) physical
    uint32_t string;             // the module's command line
    uint32_t reserved;
};

constexpr uint32_t kMbCmdline = 1u << 2, kMbMods = 1u << 3, kMbMmap = 1u << 6;
