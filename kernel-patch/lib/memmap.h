// lib/memmap.h: turn the multiboot memory map into the list of RAM ranges the frame allocator
// may hand out: usable (type 1) entries, page-aligned inward, sorted, merged, minus what is
// reserved (low memory, the kernel image, modules, the multiboot info).
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace memmap {

constexpr uint64_t kPage = 4096;
constexpr int kMaxRanges = 64;

struct Range {
    uint64_t base, end;  // [base, end)
};

struct Map {
    Range r[kMaxRanges];
    int n = 0;
    bool truncated = false;  // more ranges than kMaxRanges: the rest were dropped (reported)
    uint64_t total() const;
};

// entries: the multiboot mmap (each: u32 size not counting itself, u64 base, u64 len, u32 type).
Map from_multiboot(const uint8_t* entries, uint32_t length);
void subtract(Map& m, Range reserved);

}  // namespace memmap
