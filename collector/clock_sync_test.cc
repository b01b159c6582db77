// Clock correlation on synthetic data with a known offset and drift.
#include "clock_sync.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace spinlab::collect {
namespace {

// Guest TSC published every `period` guest cycles; the host brackets each publication by
// `width` cycles around its true host time, placed at a random point inside the bracket.
std::vector<ClockSample> synth(uint64_t guest0, double offset, double slope, int n,
                               uint64_t period, uint64_t width, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> where(0.0, 1.0);
    std::vector<ClockSample> out;
    for (int i = 0; i < n; ++i) {
        uint64_t g = guest0 + uint64_t(i) * period;
        // Integer arithmetic for the absolute values: doubles lose cycles near 2^62.
        int64_t rel = int64_t(std::llround(offset + slope * double(g - guest0) -
                                           where(rng) * double(width)));
        uint64_t before = guest0 + uint64_t(rel);
        out.push_back({g, before, before + width});
    }
    return out;
}

TEST(ClockSync, RecoversOffsetAndDrift) {
    const uint64_t guest0 = 5'000'000'000'000ull;  // TSC values of a machine up for ~30 min
    const double offset = -1'234'567'890.0;
    const double slope = 1.0 + 25e-6;  // 25 ppm
    auto samples = synth(guest0, offset, slope, 50, 26'000'000, 2'000, 1);
    ClockFit fit = fit_clock(samples);
    ASSERT_TRUE(fit.ok) << fit.error;
    EXPECT_NEAR(fit.drift_ppm, 25.0, 0.5);
    EXPECT_NEAR(fit.offset_at_ref(), offset, 2'000);
    EXPECT_EQ(fit.used, 50u);
    // Mapping a guest time in the middle of the run lands within the bracket width.
    uint64_t g = guest0 + 25 * 26'000'000ull;
    double expected = double(guest0) + offset + slope * double(g - guest0);
    EXPECT_NEAR(double(guest_to_host(fit, g)), expected, 2'000);
    EXPECT_LE(fit.residual_rms, 2'000);
}

TEST(ClockSync, IgnoresWideBracketsAndOutliers) {
    const uint64_t guest0 = 1'000'000;
    auto samples = synth(guest0, 777'000, 1.0, 40, 1'000'000, 500, 2);
    // A poller preempted for 5 ms: a huge bracket.
    samples[5].host_after += 13'000'000;
    // A guest publisher preempted between rdtsc and the store: its TSC is stale, so the
    // bracket sits far later than the line predicts (narrow bracket, large residual).
    samples[17].host_before += 3'000'000;
    samples[17].host_after += 3'000'000;
    ClockFit fit = fit_clock(samples);
    ASSERT_TRUE(fit.ok) << fit.error;
    EXPECT_EQ(fit.used, 38u);
    EXPECT_NEAR(fit.slope, 1.0, 1e-6);
    EXPECT_NEAR(fit.offset_at_ref(), 777'000, 500);
}

TEST(ClockSync, NarrowBracketsOutweighWideOnes) {
    // An overloaded host: most polls were descheduled, giving wide brackets whose midpoints
    // sit early; a few narrow ones carry the truth (offset 0, slope 1).
    std::vector<ClockSample> s;
    for (int i = 0; i < 40; ++i) {
        uint64_t g = 1'000'000'000 + uint64_t(i) * 2'000'000;
        if (i % 5 == 0)
            s.push_back({g, g - 100, g + 100});
        else
            s.push_back({g, g - 2'400'000, g + 200'000});
    }
    ClockFit fit = fit_clock(s);
    ASSERT_TRUE(fit.ok) << fit.error;
    EXPECT_NEAR(fit.offset_at_ref(), 0.0, 1'000);
    EXPECT_NEAR(fit.drift_ppm, 0.0, 1.0);
}

TEST(ClockSync, NeedsTwoDistinctGuestTimes) {
    EXPECT_FALSE(fit_clock({}).ok);
    ClockSample one{100, 200, 210};
    ClockFit f1 = fit_clock(std::vector<ClockSample>{one});
    EXPECT_FALSE(f1.ok);
    EXPECT_NE(f1.error.find("at least 2"), std::string::npos);
    ClockFit same = fit_clock(std::vector<ClockSample>{one, one, one});
    EXPECT_FALSE(same.ok);
    EXPECT_NE(same.error.find("spread"), std::string::npos);
}

TEST(ClockSync, RejectsBracketsThatRunBackwards) {
    std::vector<ClockSample> s = {{100, 300, 200}, {200, 400, 300}, {300, 600, 610}};
    ClockFit fit = fit_clock(s);
    EXPECT_FALSE(fit.ok);
}

TEST(ClockSync, KeepsPrecisionNearTheTopOfTheRange) {
    // 2^62 cycles: far beyond what a double represents exactly as an absolute value.
    const uint64_t guest0 = 1ull << 62;
    auto samples = synth(guest0, 1'000.0, 1.0, 20, 1'000'000, 10, 3);
    ClockFit fit = fit_clock(samples);
    ASSERT_TRUE(fit.ok);
    uint64_t g = guest0 + 10 * 1'000'000ull;
    EXPECT_NEAR(double(int64_t(guest_to_host(fit, g) - (g + 1'000))), 0.0, 20.0);
}

}  // namespace
}  // namespace spinlab::collect
