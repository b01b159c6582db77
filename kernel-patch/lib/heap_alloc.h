// lib/heap_alloc.h: the kernel heap: first fit over an address-ordered free list, blocks
// coalesced on free, each with a header that catches double frees and foreign pointers.
// Not thread-safe: the kernel wraps it in its "heap" spinlock.
#pragma once
#include <stddef.h>
#include <stdint.h>

class HeapAllocator {
public:
    static constexpr size_t kAlign = 16;
    static constexpr size_t kHeaderSize = 32;  // bytes of bookkeeping before each block
    void init(void* base, size_t size);
    void* alloc(size_t n);     // kAlign-aligned, or nullptr when nothing fits
    enum class FreeResult { kOk, kNull, kNotOurs, kDoubleFree, kCorrupt };
    FreeResult free(void* p);
    size_t free_bytes() const { return free_bytes_; }   // headers of free blocks included
    size_t capacity() const { return size_; }
    size_t allocated_blocks() const { return live_; }

private:
    struct Block {
        uint64_t size;    // bytes including this header, a multiple of kAlign
        uint32_t magic;   // kFree or kUsed
        uint32_t check;   // ~magic ^ low bits of size: a cheap corruption check
        Block* next;      // free blocks only
        uint64_t pad;
    };
    static_assert(sizeof(Block) == kHeaderSize);
    static constexpr uint32_t kFree = 0xf7eeb10c, kUsed = 0xa110c8ed;
    static uint32_t check_of(const Block* b) { return ~b->magic ^ uint32_t(b->size); }
    Block* free_list_ = nullptr;   // sorted by address
    uint8_t* base_ = nullptr;
    size_t size_ = 0, free_bytes_ = 0, live_ = 0;
};
