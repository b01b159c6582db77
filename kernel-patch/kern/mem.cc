// kern/mem.cc: the physical frame allocator and the kernel heap (pure logic in lib/).
#include "mem.h"

#include "../lib/frame_alloc.h"
#include "../lib/heap_alloc.h"
#include "../lib/memmap.h"
#include "console.h"
#include "multiboot.h"
#include "spinlock.h"

extern "C" char kernel_start[], kernel_end[];

namespace {

// RAM the kernel can use: the identity map covers 4 GiB and the top GiB is MMIO.
constexpr uint64_t kMaxPhys = 3ull << 30;
uint64_t frame_bitmap[kMaxPhys / FrameAllocator::kPage / 64];

Spinlock pmm_lock = SPINLOCK_INIT("pmm");
FrameAllocator frames;     // pmm_lock must be held when using it

Spinlock heap_lock = SPINLOCK_INIT("heap");
HeapAllocator heap;        // heap_lock must be held when using it
constexpr uint64_t kHeapPages = 4096;  // 16 MiB

void zero_pages(uint64_t phys, uint64_t n) {
    __builtin_memset(reinterpret_cast<void*>(phys), 0, n * FrameAllocator::kPage);
}

}  // namespace

void pmm_init(uint32_t mb_info) {
    auto* mb = reinterpret_cast<const MultibootInfo*>(uintptr_t(mb_info));
    if (!(mb->flags & kMbMmap)) panic("pmm: the boot loader gave no memory map");
    memmap::Map m = memmap::from_multiboot(reinterpret_cast<const uint8_t*>(uintptr_t(mb->mmap_addr)),
                                           mb->mmap_length);
    if (m.truncated) kprintf("pmm: memory map has more than %d ranges; the rest is unused\n",
                             memmap::kMaxRanges);
    // Keep what must not be handed out: real-mode memory (AP trampoline, BIOS data, EBDA),
    // the kernel image, the multiboot info and everything it points to, MMIO above kMaxPhys.
    memmap::subtract(m, {0, 0x100000});
    memmap::subtract(m, {uint64_t(kernel_start), uint64_t(kernel_end)});
    memmap::subtract(m, {mb_info, mb_info + sizeof(MultibootInfo)});
    memmap::subtract(m, {mb->mmap_addr, uint64_t(mb->mmap_addr) + mb->mmap_length});
    if (mb->flags & kMbCmdline) memmap::subtract(m, {mb->cmdline, mb->cmdline + 4096ull});
    if (mb->flags & kMbMods) {
        auto* mods = reinterpret_cast<const MultibootModule*>(uintptr_t(mb->mods_addr));
        memmap::subtract(m, {mb->mods_addr, mb->mods_addr + mb->mods_count * 16ull});
        for (uint32_t i = 0; i < mb->mods_count; i++) {
            memmap::subtract(m, {mods[i].start, mods[i].end});
            memmap::subtract(m, {mods[i].string, mods[i].string + 4096ull});
        }
    }
    memmap::subtract(m, {kMaxPhys, ~0ull});
    frames.init(frame_bitmap, kMaxPhys / FrameAllocator::kPage);
    for (int i = 0; i < m.n; i++) frames.add_free(m.r[i].base, m.r[i].end);
    if (frames.free_frames() < 1024) panic("pmm: only %lu free frames", frames.free_frames());
}

uint64_t page_alloc() { return pages_alloc(1); }

uint64_t pages_alloc_uncleared(uint64_t n) {
    SpinGuardIrq g(&pmm_lock);
    return n == 1 ? frames.alloc() : frames.alloc_contiguous(n);
}

uint64_t pages_alloc(uint64_t n) {
    uint64_t p = pages_alloc_uncleared(n);
    if (p) zero_pages(p, n);
    return p;
}

void page_free(uint64_t phys) {
    FrameAllocator::FreeResult r;
    {
        SpinGuardIrq g(&pmm_lock);
        r = frames.free(phys);
    }
    if (r != FrameAllocator::FreeResult::kOk)
        panic("page_free(0x%lx): %s", phys,
              r == FrameAllocator::FreeResult::kDoubleFree ? "double free" : "bad address");
}

uint64_t pmm_free_frames() {
    SpinGuardIrq g(&pmm_lock);
    return frames.free_frames();
}
uint64_t pmm_total_frames() { return frames.frames(); }

void heap_init() {
    // kmalloc's blocks are not zeroed (kzalloc clears its own); the allocator writes its headers.
    uint64_t base = pages_alloc_uncleared(kHeapPages);
    if (!base) panic("heap: no room for %lu pages", kHeapPages);
    heap.init(reinterpret_cast<void*>(base), kHeapPages * FrameAllocator::kPage);
}

void* kmalloc(size_t n) {
    SpinGuardIrq g(&heap_lock);
    return heap.alloc(n);
}

void* kzalloc(size_t n) {
    void* p = kmalloc(n);
    if (p) __builtin_memset(p, 0, n);
    return p;
}

void kfree(void* p) {
    HeapAllocator::FreeResult r;
    {
        SpinGuardIrq g(&heap_lock);
        r = heap.free(p);
    }
    if (r == HeapAllocator::FreeResult::kOk || r == HeapAllocator::FreeResult::kNull) return;
    panic("kfree(%p): %s", p,
          r == HeapAllocator::FreeResult::kDoubleFree ? "double free"
          : r == HeapAllocator::FreeResult::kNotOurs  ? "not a heap pointer"
                                                      : "heap block header corrupt");
}

size_t heap_free_bytes() {
    SpinGuardIrq g(&heap_lock);
    return heap.free_bytes();
}
size_t heap_live_blocks() {
    SpinGuardIrq g(&heap_lock);
    return heap.allocated_blocks();
}

void* operator new(size_t n) {
    void* p = kmalloc(n);
    if (!p) panic("operator new(%zu): out of memory", n);
    return p;
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { kfree(p); }
void operator delete(void* p, size_t) noexcept { kfree(p); }
void operator delete[](void* p) noexcept { kfree(p); }
void operator delete[](void* p, size_t) noexcept { kfree(p); }
