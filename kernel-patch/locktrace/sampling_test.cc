// locktrace/sampling_test.cc: the three sampling rules (sampling.h) and the long waits, at
// and around every threshold.
#include "sampling.h"

#include <gtest/gtest.h>

namespace spinlab::locktrace {
namespace {

using lockstat::SpinlockParams;

constexpr uint32_t kAll = kTraceGroupSpinlock | kTraceGroupLongWait;
constexpr uint64_t kLongWait = 1u << 20;

HoldFacts uncontended(uint64_t hold = 10) { return {false, false, false, 0, 0, hold}; }
HoldFacts contended(uint64_t spins, uint64_t wait = 100, uint64_t hold = 10) {
    return {true, false, false, spins, wait, hold};
}

SpinlockParams params(uint32_t spin, uint32_t acquire, uint32_t contention, uint32_t hold) {
    return {spin, acquire, contention, hold};
}

TEST(Sampling, AcquireRuleFiresOnEveryNthUncontendedOnly) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1, 1000, 1, 1000000);
    for (int round = 0; round < 3; round++) {
        for (int i = 1; i < 1000; i++) ASSERT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), 0) << i;
        EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), kTraceRuleAcquireSample);
    }
}

TEST(Sampling, ContendedAcquisitionsDoNotMoveTheAcquireCountdown) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1000, 3, 1, 1000000);  // contended ones below the spin threshold
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(5)), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), kTraceRuleAcquireSample);
}

TEST(Sampling, SpinThresholdAtAndAround) {
    SampleCountdowns c{};
    const SpinlockParams p = params(10, 1000, 1, 1000000);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(9)), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(10)), kTraceRuleContention);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(11)), kTraceRuleContention);
}

TEST(Sampling, SpinThresholdOneTakesEveryContendedAcquisition) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1, 1000, 1, 1000000);
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(sample_release(c, p, kAll, kLongWait, contended(1)), kTraceRuleContention);
}

TEST(Sampling, ContentionRateCountsOnlyQualifyingAcquisitions) {
    SampleCountdowns c{};
    const SpinlockParams p = params(4, 1000, 3, 1000000);
    int fired = 0;
    for (int i = 0; i < 30; i++) {
        EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(3)), 0);  // below threshold
        const uint8_t r = sample_release(c, p, kAll, kLongWait, contended(4));
        fired += r == kTraceRuleContention;
        EXPECT_EQ(r != 0, (i + 1) % 3 == 0) << i;
    }
    EXPECT_EQ(fired, 10);
}

TEST(Sampling, HoldThresholdAtAndAroundForAnyAcquisition) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1000, 1000, 1, 5000);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended(4999)), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended(5000)), kTraceRuleHold);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(1, 10, 5001)), kTraceRuleHold);
    HoldFacts overflow = uncontended(1u << 30);
    overflow.hold_overflow = true;
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, overflow), 0);
}

TEST(Sampling, LongWaitsAreNeverSampled) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1000000, 1000, 1000, 1000000);
    for (int i = 0; i < 50; i++) {
        EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(3, kLongWait - 1)), 0);
        EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(3, kLongWait)), kTraceRuleLongWait);
    }
    HoldFacts overflow = contended(3, kLongWait * 4);
    overflow.wait_overflow = true;
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, overflow), 0);
}

TEST(Sampling, RulesCombine) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1, 1000, 1, 5000);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, contended(2, kLongWait, 6000)),
              kTraceRuleContention | kTraceRuleHold | kTraceRuleLongWait);
}

TEST(Sampling, GroupsGateTheirRules) {
    SampleCountdowns c{};
    const SpinlockParams p = params(1, 1000, 1, 5000);
    EXPECT_EQ(sample_release(c, p, kTraceGroupLongWait, kLongWait, contended(2, 10, 6000)), 0);
    EXPECT_EQ(sample_release(c, p, kTraceGroupSpinlock, kLongWait, contended(2, kLongWait, 10)),
              kTraceRuleContention);
    EXPECT_EQ(sample_release(c, p, 0, kLongWait, contended(2, kLongWait, 6000)), 0);
}

TEST(Sampling, LoweredRateAppliesAtOnce) {
    SampleCountdowns c{};
    SpinlockParams p = params(1, 1000, 1, 1000000);
    for (int i = 0; i < 10; i++) sample_release(c, p, kAll, kLongWait, uncontended());
    p.acquire_sample_rate = 2;
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), 0);
    EXPECT_EQ(sample_release(c, p, kAll, kLongWait, uncontended()), kTraceRuleAcquireSample);
}

}  // namespace
}  // namespace spinlab::locktrace
