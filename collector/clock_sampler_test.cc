// collector/clock_sampler_test.cc: when the sampler expects the guest's next clock publication.
#include "clock_sampler.h"

#include <gtest/gtest.h>

namespace spinlab::collect {
namespace {

using Clock = PublicationForecast::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(1000));

TEST(PublicationForecast, ExpectsTheFirstPublicationAtOrAfterATime) {
    PublicationForecast f;
    EXPECT_FALSE(f.known());
    f.seen(kT0, nullptr, milliseconds(10));
    ASSERT_TRUE(f.known());
    EXPECT_EQ(f.next_after(kT0 - milliseconds(3)), kT0 + milliseconds(10));  // never the one seen
    EXPECT_EQ(f.next_after(kT0 + milliseconds(10)), kT0 + milliseconds(10));
    EXPECT_EQ(f.next_after(kT0 + milliseconds(10) + microseconds(1)), kT0 + milliseconds(20));
    EXPECT_EQ(f.next_after(kT0 + milliseconds(95)), kT0 + milliseconds(100));
}

TEST(PublicationForecast, TheLeadFollowsHowFarPublicationsCameFromTheirForecast) {
    PublicationForecast f;
    EXPECT_EQ(f.lead(), PublicationForecast::kMaxLead);  // nothing forecast yet: the widest
    f.seen(kT0, nullptr, milliseconds(10));
    EXPECT_EQ(f.lead(), PublicationForecast::kMaxLead);
    auto at = kT0;
    for (int i = 1; i <= 40; ++i) {  // each 20 us late
        Clock::time_point expected = at + milliseconds(10);
        at = expected + microseconds(20);
        f.seen(at, &expected, milliseconds(10));
    }
    EXPECT_EQ(f.lead(), PublicationForecast::kMinLead);  // 1.5 x 20 + 50 us is below the floor
    for (int i = 1; i <= 8; ++i) {  // a few 400 us late: above the 90th percentile of the last 32
        Clock::time_point expected = at + milliseconds(10);
        at = expected + microseconds(400);
        f.seen(at, &expected, milliseconds(10));
    }
    EXPECT_EQ(f.lead(), microseconds(650));
    for (int i = 1; i <= 8; ++i) {  // far off: the lead stops at the ceiling
        Clock::time_point expected = at + milliseconds(10);
        at = expected - milliseconds(3);
        f.seen(at, &expected, milliseconds(10));
    }
    EXPECT_EQ(f.lead(), PublicationForecast::kMaxLead);
}

TEST(PublicationForecast, MissesInARowForgetThePhase) {
    PublicationForecast f;
    f.seen(kT0, nullptr, milliseconds(10));
    f.missed();
    EXPECT_TRUE(f.known());  // one miss: a publication held up, the phase stands
    Clock::time_point expected = kT0 + milliseconds(20);
    f.seen(expected, &expected, milliseconds(10));
    f.missed();
    EXPECT_TRUE(f.known());  // a success in between restarts the count
    f.missed();
    EXPECT_FALSE(f.known());
    EXPECT_EQ(f.lead(), PublicationForecast::kMaxLead);  // the errors went with the phase
}

}  // namespace
}  // namespace spinlab::collect
