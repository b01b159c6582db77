// lib/frame_alloc.h: physical page frames, one bit each (1 = in use). The bitmap storage is
// given by the caller; the kernel guards the allocator with its "pmm" spinlock.
#pragma once
#include <stdint.h>

class FrameAllocator {
public:
    static constexpr uint64_t kPage = 4096;
    // bitmap holds nframes bits; every frame starts in use until add_free says otherwise.
    void init(uint64_t* bitmap, uint64_t nframes);
    void add_free(uint64_t base, uint64_t end);   // [base, end), page-aligned inward
    uint64_t alloc();                             // a free frame's address, or 0 when none
    uint64_t alloc_contiguous(uint64_t n);        // n adjacent frames, or 0
    enum class FreeResult { kOk, kOutOfRange, kUnaligned, kDoubleFree };
    FreeResult free(uint64_t phys);
    uint64_t free_frames() const { return free_; }
    uint64_t frames() const { return n_; }

private:
    bool used(uint64_t f) const { return bits_[f / 64] >> (f % 64) & 1; }
    void set(uint64_t f, bool u) {
        if (u) bits_[f / 64] |= 1ull << (f % 64);
        else bits_[f / 64] &= ~(1ull << (f % 64));
    }
    uint64_t* bits_ = nullptr;
    uint64_t n_ = 0;
    uint64_t free_ = 0;
    uint64_t hint_ = 0;  // where the next search starts (next fit)
};
