#include "lib/heap_alloc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

struct Fixture {
    std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 16);
    HeapAllocator h;
    Fixture() { h.init(mem.data(), mem.size()); }
};

TEST(HeapAlloc, AlignedAndInsideTheRegion) {
    Fixture f;
    for (size_t n : {1, 15, 16, 17, 100, 1000}) {
        auto* p = static_cast<uint8_t*>(f.h.alloc(n));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % HeapAllocator::kAlign, 0u);
        EXPECT_GE(p, f.mem.data());
        EXPECT_LE(p + n, f.mem.data() + f.mem.size());
    }
}

TEST(HeapAlloc, FreeCoalescesBackToOneBlock) {
    Fixture f;
    size_t initial = f.h.free_bytes();
    std::vector<void*> ps;
    for (int i = 0; i < 50; i++) ps.push_back(f.h.alloc(100 + i));
    // Free in an interleaved order so merging happens on both sides.
    for (size_t i = 0; i < ps.size(); i += 2) EXPECT_EQ(f.h.free(ps[i]), HeapAllocator::FreeResult::kOk);
    for (size_t i = 1; i < ps.size(); i += 2) EXPECT_EQ(f.h.free(ps[i]), HeapAllocator::FreeResult::kOk);
    EXPECT_EQ(f.h.free_bytes(), initial);
    EXPECT_EQ(f.h.allocated_blocks(), 0u);
    // Fully coalesced: one allocation of nearly everything fits again.
    EXPECT_NE(f.h.alloc(initial - 64), nullptr);
}

TEST(HeapAlloc, DetectsDoubleFreeForeignAndCorrupt) {
    Fixture f;
    auto* p = static_cast<uint8_t*>(f.h.alloc(64));
    EXPECT_EQ(f.h.free(nullptr), HeapAllocator::FreeResult::kNull);
    int on_stack;
    EXPECT_EQ(f.h.free(&on_stack), HeapAllocator::FreeResult::kNotOurs);
    EXPECT_EQ(f.h.free(p + 1), HeapAllocator::FreeResult::kNotOurs);
    auto* q = static_cast<uint8_t*>(f.h.alloc(64));
    std::memset(q - HeapAllocator::kHeaderSize, 0x41, HeapAllocator::kHeaderSize);  // smash q's header
    EXPECT_EQ(f.h.free(q), HeapAllocator::FreeResult::kCorrupt);
    EXPECT_EQ(f.h.free(p), HeapAllocator::FreeResult::kOk);
    EXPECT_EQ(f.h.free(p), HeapAllocator::FreeResult::kDoubleFree);
}

TEST(HeapAlloc, ExhaustionReturnsNull) {
    Fixture f;
    EXPECT_EQ(f.h.alloc(0), nullptr);
    EXPECT_EQ(f.h.alloc(1 << 20), nullptr);
    std::vector<void*> ps;
    while (void* p = f.h.alloc(1000)) ps.push_back(p);
    EXPECT_GT(ps.size(), 50u);
    for (void* p : ps) f.h.free(p);
    EXPECT_EQ(f.h.allocated_blocks(), 0u);
}

TEST(HeapAlloc, RandomChurnKeepsContentsAndAccounts) {
    Fixture f;
    size_t initial = f.h.free_bytes();
    std::mt19937 rng(7);
    struct Slot { uint8_t* p = nullptr; size_t n = 0; uint8_t tag = 0; };
    std::vector<Slot> slots(64);
    for (int r = 0; r < 20000; r++) {
        Slot& s = slots[rng() % slots.size()];
        if (s.p) {
            for (size_t i = 0; i < s.n; i++) ASSERT_EQ(s.p[i], uint8_t(s.tag + i));
            ASSERT_EQ(f.h.free(s.p), HeapAllocator::FreeResult::kOk);
            s.p = nullptr;
        } else {
            s.n = 1 + rng() % 600;
            s.tag = uint8_t(rng());
            s.p = static_cast<uint8_t*>(f.h.alloc(s.n));
            if (s.p)
                for (size_t i = 0; i < s.n; i++) s.p[i] = uint8_t(s.tag + i);
        }
    }
    for (Slot& s : slots)
        if (s.p) f.h.free(s.p);
    EXPECT_EQ(f.h.free_bytes(), initial);
}

}  // namespace
