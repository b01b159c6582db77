// lockstat/perf_record_test.cc: recording, overflow, sampling, merging and reset.
#include "perf_record.h"

#include <gtest/gtest.h>

#include <memory>


namespace spinlab::lockstat {
namespace {

TEST(PerfRecord, UncontendedCountsWithoutHistogram) {
    LockClassPerf c{};
    record_uncontended(c);
    record_uncontended(c);
    EXPECT_EQ(c.acquisitions, 2u);
    EXPECT_EQ(c.uncontended, 2u);
    EXPECT_EQ(wait_hist_total(c), 0u);
    EXPECT_TRUE(wait_invariant_holds(c));
}

TEST(PerfRecord, WaitGoesInItsMsbBucketWithSumsMaxAndLhp) {
    LockClassPerf c{};
    WaitRecord w = record_wait(c, 1000, 1000 + 300, LhpClass::kHolderPreempted);
    EXPECT_FALSE(w.overflow);
    EXPECT_EQ(w.cycles, 300u);
    record_wait(c, 0, 256, LhpClass::kUnknown);
    record_wait(c, 0, 255, LhpClass::kUnknown);
    EXPECT_EQ(c.wait_hist[8], 2u);  // 300 and 256
    EXPECT_EQ(c.wait_hist[7], 1u);  // 255
    EXPECT_EQ(c.acquisitions, 3u);
    EXPECT_EQ(c.uncontended, 0u);
    EXPECT_EQ(c.wait_cycles_sum, 300u + 256 + 255);
    EXPECT_EQ(c.wait_cycles_max, 300u);
    EXPECT_EQ(c.lhp_count[static_cast<int>(LhpClass::kHolderPreempted)], 1u);
    EXPECT_EQ(c.lhp_cycles[static_cast<int>(LhpClass::kHolderPreempted)], 300u);
    EXPECT_EQ(c.lhp_count[static_cast<int>(LhpClass::kUnknown)], 2u);
    EXPECT_TRUE(wait_invariant_holds(c));
}

TEST(PerfRecord, ZeroCycleWaitIsBucketZero) {
    LockClassPerf c{};
    record_wait(c, 77, 77, LhpClass::kNeither);
    EXPECT_EQ(c.wait_hist[0], 1u);
    EXPECT_TRUE(wait_invariant_holds(c));
}

TEST(PerfRecord, BackwardsClockIsOverflowNeverDropped) {
    LockClassPerf c{};
    record_uncontended(c);
    WaitRecord w = record_wait(c, 5000, 4000, LhpClass::kUnknown);
    EXPECT_TRUE(w.overflow);
    EXPECT_EQ(c.wait_overflow, 1u);
    EXPECT_EQ(wait_hist_total(c), 0u);
    EXPECT_EQ(c.wait_cycles_sum, 0u);
    EXPECT_EQ(c.acquisitions, 2u);
    EXPECT_EQ(c.lhp_count[static_cast<int>(LhpClass::kUnknown)], 1u);
    EXPECT_TRUE(wait_invariant_holds(c));
    // Breaking the invariant is detected.
    c.acquisitions++;
    EXPECT_FALSE(wait_invariant_holds(c));
}

TEST(PerfRecord, HoldThresholdIsStrictlyGreater) {
    LockClassPerf c{};
    record_hold(c, 0, 1000000, 1000000);
    EXPECT_EQ(c.long_holds, 0u);
    record_hold(c, 0, 1000001, 1000000);
    EXPECT_EQ(c.long_holds, 1u);
    record_hold(c, 10, 5, 1000000);
    EXPECT_EQ(c.hold_overflow, 1u);
    EXPECT_EQ(c.holds_timed, 3u);
    EXPECT_EQ(hold_hist_total(c) + c.hold_overflow, c.holds_timed);
    EXPECT_EQ(c.hold_hist[19], 2u);  // 2^19 <= 1000000 < 2^20
    EXPECT_EQ(c.hold_cycles_max, 1000001u);
}

TEST(PerfRecord, EveryRateThUncontendedHoldIsSampled) {
    auto p = std::make_unique<CpuPerfData>();
    init_cpu_perf(*p, 3, 1000);
    int sampled = 0, first = -1;
    for (int i = 1; i <= 3000; i++) {
        if (sample_uncontended_hold(*p, 1000)) {
            sampled++;
            if (first < 0) first = i;
        }
    }
    EXPECT_EQ(sampled, 3);
    EXPECT_EQ(first, 1000);
    // A new rate takes effect at the next reload.
    for (int i = 1; i <= 1000; i++) sample_uncontended_hold(*p, 5000);
    EXPECT_EQ(p->acquire_sample_countdown, 5000u);
}

TEST(PerfRecord, InitStampsTheHeader) {
    auto p = std::make_unique<CpuPerfData>();
    p->classes[4].acquisitions = 99;
    init_cpu_perf(*p, 6, 1000);
    EXPECT_EQ(p->magic, kPerfDataMagic);
    EXPECT_EQ(p->version, kPerfDataVersion);
    EXPECT_EQ(p->cpu, 6u);
    EXPECT_EQ(p->size, sizeof(CpuPerfData));
    EXPECT_EQ(p->classes[4].acquisitions, 0u);
}

TEST(PerfRecord, MergeAddsCountsAndTakesLargerMaxima) {
    LockClassPerf a{}, b{}, m{};
    record_uncontended(a);
    record_wait(a, 0, 1000, LhpClass::kNeither);
    record_hold(a, 0, 50, 1000000);
    record_wait(b, 0, 5000, LhpClass::kBoth);
    record_wait(b, 9, 1, LhpClass::kUnknown);
    record_hold(b, 0, 2000000, 1000000);
    merge_class_perf(m, a);
    merge_class_perf(m, b);
    EXPECT_EQ(m.acquisitions, 4u);
    EXPECT_EQ(m.uncontended, 1u);
    EXPECT_EQ(m.wait_overflow, 1u);
    EXPECT_EQ(m.wait_hist[9], 1u);
    EXPECT_EQ(m.wait_hist[12], 1u);
    EXPECT_EQ(m.wait_cycles_sum, 6000u);
    EXPECT_EQ(m.wait_cycles_max, 5000u);
    EXPECT_EQ(m.holds_timed, 2u);
    EXPECT_EQ(m.hold_cycles_max, 2000000u);
    EXPECT_EQ(m.long_holds, 1u);
    EXPECT_EQ(m.lhp_count[static_cast<int>(LhpClass::kBoth)], 1u);
    EXPECT_TRUE(wait_invariant_holds(m));
}

TEST(PerfRecord, ResetOneClassOrEverything) {
    auto p = std::make_unique<CpuPerfData>();
    init_cpu_perf(*p, 0, 1000);
    record_uncontended(p->classes[1]);
    record_uncontended(p->classes[2]);
    reset_cpu_perf(*p, 1);
    EXPECT_EQ(p->classes[1].acquisitions, 0u);
    EXPECT_EQ(p->classes[2].acquisitions, 1u);
    EXPECT_EQ(p->resets, 1u);
    reset_cpu_perf(*p, kAllLockClasses);
    EXPECT_EQ(p->classes[2].acquisitions, 0u);
    EXPECT_EQ(p->magic, kPerfDataMagic);
    EXPECT_EQ(p->resets, 2u);
}

}  // namespace
}  // namespace spinlab::lockstat
