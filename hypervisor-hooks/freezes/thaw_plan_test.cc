#include "thaw_plan.h"

#include <gtest/gtest.h>

namespace spinlab::load {
namespace {

TEST(WriteEstimate, MedianOfTheLatestWrites) {
    WriteEstimate e(3);
    EXPECT_EQ(e.median_ns(), 0u);
    e.add(3'000'000);
    EXPECT_EQ(e.median_ns(), 3'000'000u);
    e.add(1'000);
    e.add(2'000);
    EXPECT_EQ(e.median_ns(), 2'000u);  // of 3 ms, 1 us, 2 us
    e.add(9'000);                      // the 3 ms write leaves: 1, 2, 9 us
    EXPECT_EQ(e.count(), 3u);
    EXPECT_EQ(e.median_ns(), 2'000u);
    e.add(10'000);  // 2, 9, 10 us
    EXPECT_EQ(e.median_ns(), 9'000u);
}

TEST(WriteEstimate, OneSlowWriteDoesNotMoveTheEstimate) {
    WriteEstimate e;
    for (int i = 0; i < 8; ++i) e.add(10'000);
    e.add(12'000'000);
    EXPECT_EQ(e.median_ns(), 10'000u);
}

TEST(ThawLead, IsTheEstimatedThawWriteAtMostHalfTheWindow) {
    WriteEstimate e;
    EXPECT_EQ(thaw_lead_ns(e, 30'000'000), 0u);  // nothing measured: no lead
    for (int i = 0; i < 5; ++i) e.add(3'000'000);
    EXPECT_EQ(thaw_lead_ns(e, 30'000'000), 3'000'000u);  // a 3 ms v1 write: asked 3 ms earlier
    EXPECT_EQ(thaw_lead_ns(e, 4'000'000), 2'000'000u);   // never more than half a short window
}

}  // namespace
}  // namespace spinlab::load
