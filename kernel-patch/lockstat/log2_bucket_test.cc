// lockstat/log2_bucket_test.cc: the bucket of every power-of-two edge.
#include "log2_bucket.h"

#include <gtest/gtest.h>

namespace spinlab::lockstat {
namespace {

TEST(Log2Bucket, EveryPowerOfTwoEdge) {
    for (uint32_t k = 0; k < 64; k++) {
        const uint64_t p = 1ull << k;
        SCOPED_TRACE(k);
        EXPECT_EQ(log2_bucket(p), k);  // 2^k opens bucket k
        if (k >= 1) {
            EXPECT_EQ(log2_bucket(p - 1), k - 1);  // 2^k - 1 closes bucket k-1
            EXPECT_EQ(log2_bucket(p + 1), k);      // 2^k + 1 stays in bucket k
        }
    }
}

TEST(Log2Bucket, ZeroAndMaximum) {
    EXPECT_EQ(log2_bucket(0), 0u);  // no msb: bucket 0 holds [0, 2)
    EXPECT_EQ(log2_bucket(1), 0u);
    EXPECT_EQ(log2_bucket(~0ull), 63u);
}

TEST(Log2Bucket, OriginalExperimentExamples) {
    // The original experiment's row "2^ 7" holds waits of 128 (10000000b) to 255 (11111111b)
    // cycles.
    EXPECT_EQ(log2_bucket(128), 7u);
    EXPECT_EQ(log2_bucket(255), 7u);
    EXPECT_EQ(log2_bucket(256), 8u);
    EXPECT_EQ(log2_bucket(511), 8u);
}

TEST(Log2Bucket, FloorIsTheSmallestMember) {
    EXPECT_EQ(log2_bucket_floor(0), 0u);
    for (uint32_t k = 1; k < 64; k++) EXPECT_EQ(log2_bucket(log2_bucket_floor(k)), k);
}

}  // namespace
}  // namespace spinlab::lockstat
