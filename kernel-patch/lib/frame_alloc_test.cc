#include "lib/frame_alloc.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace {

struct Fixture {
    std::vector<uint64_t> bits = std::vector<uint64_t>(4);  // 256 frames
    FrameAllocator a;
    Fixture() { a.init(bits.data(), 256); }
};

TEST(FrameAlloc, StartsFullUntilRangesAreAdded) {
    Fixture f;
    EXPECT_EQ(f.a.free_frames(), 0u);
    EXPECT_EQ(f.a.alloc(), 0u);
    f.a.add_free(0x10000, 0x20000);
    EXPECT_EQ(f.a.free_frames(), 16u);
}

TEST(FrameAlloc, HandsOutEachFrameOnceAndTakesItBack) {
    Fixture f;
    f.a.add_free(0x1000, 0x100000);  // frame 0 never given: 0 means "none"
    std::set<uint64_t> seen;
    for (uint64_t p; (p = f.a.alloc());) {
        EXPECT_EQ(p % 4096, 0u);
        EXPECT_TRUE(seen.insert(p).second) << "frame handed out twice: " << p;
    }
    EXPECT_EQ(seen.size(), 255u);
    EXPECT_EQ(f.a.free_frames(), 0u);
    for (uint64_t p : seen) EXPECT_EQ(f.a.free(p), FrameAllocator::FreeResult::kOk);
    EXPECT_EQ(f.a.free_frames(), 255u);
}

TEST(FrameAlloc, DetectsDoubleFreeAndBadAddresses) {
    Fixture f;
    f.a.add_free(0x1000, 0x100000);
    uint64_t p = f.a.alloc();
    EXPECT_EQ(f.a.free(p), FrameAllocator::FreeResult::kOk);
    EXPECT_EQ(f.a.free(p), FrameAllocator::FreeResult::kDoubleFree);
    EXPECT_EQ(f.a.free(p + 8), FrameAllocator::FreeResult::kUnaligned);
    EXPECT_EQ(f.a.free(0x100000), FrameAllocator::FreeResult::kOutOfRange);
    EXPECT_EQ(f.a.free(0), FrameAllocator::FreeResult::kOutOfRange);
}

TEST(FrameAlloc, ContiguousRunsSkipHoles) {
    Fixture f;
    f.a.add_free(0x1000, 0x4000);    // frames 1-3
    f.a.add_free(0x10000, 0x18000);  // frames 16-23
    uint64_t p = f.a.alloc_contiguous(5);
    EXPECT_EQ(p, 0x10000u);
    EXPECT_EQ(f.a.free_frames(), 3u + 3u);
    EXPECT_EQ(f.a.alloc_contiguous(4), 0u);  // no run of 4 left
    EXPECT_EQ(f.a.alloc_contiguous(3), 0x1000u);
}

}  // namespace
