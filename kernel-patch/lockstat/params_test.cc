// lockstat/params_test.cc: validation at and around each minimum, all-or-nothing sets.
#include "params.h"

#include <gtest/gtest.h>

#include <cstring>

namespace spinlab::lockstat {
namespace {

constexpr uint32_t kSub =
    static_cast<uint32_t>(EventTraceInformationClass::kEventTraceSpinlockInformation);

EventTraceSpinlockInformation with(uint32_t offset, uint32_t value) {
    EventTraceSpinlockInformation in = {kSub, kMinSpinThreshold, kMinAcquireSampleRate,
                                        kMinContentionSampleRate, kMinHoldThreshold};
    std::memcpy(reinterpret_cast<char*>(&in) + offset, &value, sizeof value);
    return in;
}

uint32_t field(const EventTraceSpinlockInformation& in, uint32_t offset) {
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const char*>(&in) + offset, sizeof v);
    return v;
}

TEST(SpinlockParams, DefaultsAreTheMinimums) {
    EXPECT_EQ(kDefaultSpinlockParams.spin_threshold, 1u);
    EXPECT_EQ(kDefaultSpinlockParams.acquire_sample_rate, 1000u);
    EXPECT_EQ(kDefaultSpinlockParams.contention_sample_rate, 1u);
    EXPECT_EQ(kDefaultSpinlockParams.hold_threshold, 1000000u);
    const EventTraceSpinlockInformation q = query_spinlock_params(kDefaultSpinlockParams);
    EXPECT_EQ(q.event_trace_information_class, kSub);
    EXPECT_EQ(first_invalid_param(q), nullptr);
}

TEST(SpinlockParams, AtAndAroundEachMinimum) {
    for (const SpinlockParamInfo& p : kSpinlockParamInfo) {
        SCOPED_TRACE(p.name);
        // At the minimum and above: accepted and stored.
        for (uint32_t v : {p.minimum, p.minimum + 1, 0xFFFFFFFFu}) {
            SpinlockParams live = kDefaultSpinlockParams;
            ASSERT_EQ(set_spinlock_params(live, with(p.offset, v)), Status::kSuccess);
            EXPECT_EQ(field(query_spinlock_params(live), p.offset), v);
        }
        // Below: refused, and nothing at all changes (other fields were set to non-defaults).
        for (uint32_t v : {p.minimum - 1, 0u}) {
            if (v >= p.minimum) continue;
            SpinlockParams live = {7, 2000, 7, 2000000};
            EventTraceSpinlockInformation in = with(p.offset, v);
            EXPECT_EQ(first_invalid_param(in), &p);
            EXPECT_EQ(set_spinlock_params(live, in), Status::kInvalidParameter);
            EXPECT_EQ(live.spin_threshold, 7u);
            EXPECT_EQ(live.acquire_sample_rate, 2000u);
            EXPECT_EQ(live.contention_sample_rate, 7u);
            EXPECT_EQ(live.hold_threshold, 2000000u);
        }
    }
}

TEST(SpinlockParams, NamesAreWindowsNames) {
    EXPECT_STREQ(kSpinlockParamInfo[0].name, "SpinLockSpinThreshold");
    EXPECT_STREQ(kSpinlockParamInfo[3].name, "SpinLockHoldThreshold");
    EXPECT_EQ(first_invalid_param(with(8, 999))->name, std::string("SpinLockAcquireSampleRate"));
}

TEST(SpinlockParams, WrongSubClassIsRefused) {
    SpinlockParams live = kDefaultSpinlockParams;
    EventTraceSpinlockInformation in = with(4, 50);
    in.event_trace_information_class = 4;
    EXPECT_EQ(set_spinlock_params(live, in), Status::kInvalidParameter);
    EXPECT_EQ(live.spin_threshold, 1u);
}

}  // namespace
}  // namespace spinlab::lockstat
