// lib/frame_alloc.cc: see frame_alloc.h.
#include "frame_alloc.h"

void FrameAllocator::init(uint64_t* bitmap, uint64_t nframes) {
    bits_ = bitmap;
    n_ = nframes;
    free_ = 0;
    hint_ = 0;
    for (uint64_t i = 0; i < (nframes + 63) / 64; i++) bits_[i] = ~0ull;
}

void FrameAllocator::add_free(uint64_t base, uint64_t end) {
    uint64_t f0 = (base + kPage - 1) / kPage, f1 = end / kPage;
    if (f1 > n_) f1 = n_;
    for (uint64_t f = f0; f < f1; f++)
        if (used(f)) {
            set(f, false);
            free_++;
        }
}

uint64_t FrameAllocator::alloc() {
    if (!free_) return 0;
    for (uint64_t i = 0; i < n_; i++) {
        uint64_t f = (hint_ + i) % n_;
        if (bits_[f / 64] == ~0ull) {  // skip a full word at once
            i += 63 - f % 64;
            continue;
        }
        if (!used(f)) {
            set(f, true);
            free_--;
            hint_ = f + 1;
            return f * kPage;
        }
    }
    return 0;
}

uint64_t FrameAllocator::alloc_contiguous(uint64_t n) {
    if (n == 0 || n > free_) return 0;
    uint64_t run = 0;
    for (uint64_t f = 0; f < n_; f++) {
        run = used(f) ? 0 : run + 1;
        if (run == n) {
            uint64_t first = f + 1 - n;
            for (uint64_t g = first; g <= f; g++) set(g, true);
            free_ -= n;
            return first * kPage;
        }
    }
    return 0;
}

FrameAllocator::FreeResult FrameAllocator::free(uint64_t phys) {
    if (phys % kPage) return FreeResult::kUnaligned;
    uint64_t f = phys / kPage;
    if (f >= n_ || f == 0) return FreeResult::kOutOfRange;
    if (!used(f)) return FreeResult::kDoubleFree;
    set(f, false);
    free_++;
    return FreeResult::kOk;
}
