// lockstat/long_wait_ring_test.cc: pushing, wrapping and the reader's valid range.
#include "long_wait_ring.h"

#include <gtest/gtest.h>

#include <memory>

namespace spinlab::lockstat {
namespace {

LongWait wait_no(uint64_t i) {
    return {1000 * i, i, 2, 1, 4, 0};
}

TEST(LongWaitRing, SnapshotReturnsEveryEntryOldestFirstBeforeWrapping) {
    auto r = std::make_unique<LongWaitRing>();
    for (uint64_t i = 0; i < 5; i++) long_wait_push(*r, wait_no(i));
    LongWait out[kLongWaitRingSize];
    uint64_t first = 99;
    ASSERT_EQ(long_wait_snapshot(*r, out, &first), 5u);
    EXPECT_EQ(first, 0u);
    for (uint64_t i = 0; i < 5; i++) EXPECT_EQ(out[i].wait_cycles, i);
}

TEST(LongWaitRing, WrapKeepsTheNewestN) {
    auto r = std::make_unique<LongWaitRing>();
    const uint64_t n = kLongWaitRingSize * 2 + 3;
    for (uint64_t i = 0; i < n; i++) long_wait_push(*r, wait_no(i));
    EXPECT_EQ(r->head, n);
    LongWait out[kLongWaitRingSize];
    uint64_t first = 0;
    // A quiescent ring: h1 == h2, so the slot of entry h2 - N (the oldest) is not trusted.
    ASSERT_EQ(long_wait_snapshot(*r, out, &first), kLongWaitRingSize - 1);
    EXPECT_EQ(first, n - kLongWaitRingSize + 1);
    for (uint32_t i = 0; i < kLongWaitRingSize - 1; i++) EXPECT_EQ(out[i].wait_cycles, first + i);
    EXPECT_EQ(out[0].start_tsc, 1000 * first);
}

TEST(LongWaitRing, ValidRangeExcludesSlotsTheWriterMayHaveTouched) {
    constexpr uint64_t N = kLongWaitRingSize;
    EXPECT_EQ(long_wait_valid_range(0, 0).first, 0u);
    EXPECT_EQ(long_wait_valid_range(3, 3).first, 0u);
    EXPECT_EQ(long_wait_valid_range(3, 3).end, 3u);
    // The writer advanced by N while we copied: nothing we copied can be trusted.
    EXPECT_EQ(long_wait_valid_range(10, 10 + N).first, 10u);
    EXPECT_EQ(long_wait_valid_range(10, 10 + N).end, 10u);
    // Advanced by 2: entries up to h2+1-N overwritten or being written.
    EXPECT_EQ(long_wait_valid_range(100, 102).first, 102 + 1 - N);
    EXPECT_EQ(long_wait_valid_range(100, 102).end, 100u);
}

}  // namespace
}  // namespace spinlab::lockstat
