// lockstat/lhp_test.cc: classification of a wait from steal-time samples.
#include "lhp.h"

#include <gtest/gtest.h>

namespace spinlab::lockstat {
namespace {

constexpr StealSample at(uint64_t steal, uint32_t preempted = 0) {
    return {steal, preempted, 1};
}

TEST(Lhp, NeitherWhenNoTimeWasLost) {
    EXPECT_EQ(classify_wait(at(5), at(5), at(9), at(9)), LhpClass::kNeither);
}

TEST(Lhp, HolderPreemptedWhenItsStealGrew) {
    EXPECT_EQ(classify_wait(at(5), at(6), at(9), at(9)), LhpClass::kHolderPreempted);
}

TEST(Lhp, HolderPreemptedWhenSeenPreemptedAtEitherSample) {
    EXPECT_EQ(classify_wait(at(5, 1), at(5), at(9), at(9)), LhpClass::kHolderPreempted);
    EXPECT_EQ(classify_wait(at(5), at(5, 1), at(9), at(9)), LhpClass::kHolderPreempted);
}

TEST(Lhp, WaiterPreemptedWhenItsOwnStealGrew) {
    EXPECT_EQ(classify_wait(at(5), at(5), at(9), at(1000)), LhpClass::kWaiterPreempted);
}

TEST(Lhp, Both) {
    EXPECT_EQ(classify_wait(at(5), at(6), at(9), at(10)), LhpClass::kBoth);
}

TEST(Lhp, UnknownWithoutSteal) {
    StealSample none = {0, 0, 0};
    EXPECT_EQ(classify_wait(none, none, none, none), LhpClass::kUnknown);
    EXPECT_EQ(classify_wait(at(5), none, at(9), at(10)), LhpClass::kUnknown);
    EXPECT_EQ(classify_wait(at(5), at(6), none, at(10)), LhpClass::kUnknown);
}

TEST(Lhp, Names) {
    EXPECT_STREQ(lhp_class_name(LhpClass::kHolderPreempted), "holder-preempted");
    EXPECT_STREQ(lhp_class_name(LhpClass::kUnknown), "unknown");
}

}  // namespace
}  // namespace spinlab::lockstat
