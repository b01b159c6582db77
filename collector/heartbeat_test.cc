// The guest-gone decision of watch and record.
#include "heartbeat.h"

#include <gtest/gtest.h>

namespace spinlab::collect {
namespace {

using namespace std::chrono_literals;
using Clock = Heartbeat::Clock;

TEST(Heartbeat, AStalledClockAfterMovementMeansGone) {
    Heartbeat h(1000ms);
    Clock::time_point t{};
    EXPECT_FALSE(h.observe(false, 5, t));
    EXPECT_FALSE(h.observe(false, 6, t + 100ms));
    EXPECT_FALSE(h.observe(false, 6, t + 1000ms));
    auto gone = h.observe(false, 6, t + 1100ms);
    ASSERT_TRUE(gone);
    EXPECT_NE(gone->find("stopped 1000 ms ago"), std::string::npos);
}

TEST(Heartbeat, AGuestThatNeverPublishesIsNotDeclaredGone) {
    Heartbeat h(100ms);
    Clock::time_point t{};
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(h.observe(false, 0, t + i * 1s));
}

TEST(Heartbeat, AnUnlinkedRegionMeansGoneAtOnce) {
    Heartbeat h(100s);
    auto gone = h.observe(true, 1, Clock::time_point{});
    ASSERT_TRUE(gone);
    EXPECT_NE(gone->find("removed"), std::string::npos);
}

TEST(Heartbeat, APublicationInProgressIsNoInformation) {
    Heartbeat h(1000ms);
    Clock::time_point t{};
    EXPECT_FALSE(h.observe(false, 1, t));
    EXPECT_FALSE(h.observe(false, 2, t + 10ms));
    EXPECT_FALSE(h.observe(false, std::nullopt, t + 2s));
    EXPECT_TRUE(h.observe(false, 2, t + 2s));
}

}  // namespace
}  // namespace spinlab::collect
