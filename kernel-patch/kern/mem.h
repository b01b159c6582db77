// kern/mem.h: physical frames (pmm) and the kernel heap (kmalloc), each behind its spinlock.
#pragma once
#include <stddef.h>
#include <stdint.h>

void pmm_init(uint32_t mb_info);   // boot CPU: frames from the multiboot memory map
uint64_t page_alloc();             // one zeroed 4 KiB frame (identity-mapped), 0 when out
uint64_t pages_alloc(uint64_t n);  // n contiguous zeroed frames, 0 when out
// n contiguous frames as they are: for a large buffer whose user writes every byte before it
// reads it. A frame the guest touches first is the dearest memory under nested KVM (about 3 ms
// each on the build machines' kvm_pvm: zeroing the 16 MiB heap took 12 s of an 18 s boot).
uint64_t pages_alloc_uncleared(uint64_t n);
void page_free(uint64_t phys);     // panics on a double free
uint64_t pmm_free_frames();
uint64_t pmm_total_frames();

void heap_init();                  // boot CPU, after pmm_init
void* kmalloc(size_t n);           // 16-byte aligned, not zeroed; nullptr when out
void* kzalloc(size_t n);
void kfree(void* p);               // panics on a double free or a foreign pointer
size_t heap_free_bytes();
size_t heap_live_blocks();

void* operator new(size_t n);
void* operator new[](size_t n);
void operator delete(void* p) noexcept;
void operator delete(void* p, size_t) noexcept;
void operator delete[](void* p) noexcept;
void operator delete[](void* p, size_t) noexcept;
inline void* operator new(size_t, void* p) noexcept { return p; }
