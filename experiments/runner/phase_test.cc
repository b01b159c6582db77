// experiments/runner/phase_test.cc: phase names and the order of repetitions.
#include "phase.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace spinlab::run {
namespace {

TEST(Phase, NamesRoundTrip) {
    for (const char* n : {"idle-host", "host-load", "freeze-1ms", "freeze-10000ms", "throttle-1%",
                          "throttle-99%", "neighbours-1", "neighbours-8"})
        EXPECT_EQ(parse_phase(n).name(), n);
    EXPECT_EQ(parse_phase("freeze-25ms").freeze_ms, 25u);
    EXPECT_EQ(parse_phase("throttle-40%").quota_pct, 40u);
    EXPECT_EQ(parse_phase("neighbours-3").neighbours, 3u);
    EXPECT_EQ(parse_phase("neighbours-3").kind, PhaseKind::kNeighbours);
    for (const char* bad : {"", "idle", "freeze-ms", "freeze-10", "freeze-10s", "freeze--1ms", "freeze-10001ms",
                            "preempt-10001ms", "preempt-ms", "freezes-10ms", "throttle-0%", "neighbours-0",
                            "neighbours-9", "neighbours-", "neighbours-x", "throttle-50", "throttle-1000000%",
                            "Host-load"})
        EXPECT_THROW(parse_phase(bad), std::invalid_argument) << bad;
}

// preempt-Nms, the old name of freeze-Nms (issue 53), in older specs: the same phase, named by
// its name.
TEST(Phase, PreemptNmsIsTheOldNameOfFreezeNms) {
    const Phase p = parse_phase("preempt-30ms");
    EXPECT_EQ(p.kind, PhaseKind::kFreeze);
    EXPECT_EQ(p.freeze_ms, 30u);
    EXPECT_EQ(p.name(), "freeze-30ms");
    EXPECT_EQ(p, parse_phase("freeze-30ms"));
}

TEST(Schedule, AbbaAlternatesDirection) {
    auto s = build_schedule(2, 4, Order::kAbba, 1);
    std::vector<Slot> want{{0, 1}, {1, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {1, 4}, {0, 4}};
    EXPECT_EQ(s, want);
    auto t = build_schedule(3, 2, Order::kAbba, 1);
    std::vector<Slot> want3{{0, 1}, {1, 1}, {2, 1}, {2, 2}, {1, 2}, {0, 2}};
    EXPECT_EQ(t, want3);
}

TEST(Schedule, EveryPhaseOncePerRepetition) {
    for (Order o : {Order::kAbba, Order::kShuffle}) {
        auto s = build_schedule(4, 5, o, 42);
        ASSERT_EQ(s.size(), 20u);
        for (uint32_t rep = 1; rep <= 5; ++rep) {
            std::set<uint32_t> seen;
            for (size_t i = (rep - 1) * 4; i < rep * 4; ++i) {
                EXPECT_EQ(s[i].rep, rep);  // repetition by repetition
                seen.insert(s[i].phase);
            }
            EXPECT_EQ(seen.size(), 4u);
        }
    }
}

TEST(Schedule, ShuffleIsSeededAndBalanced) {
    EXPECT_EQ(build_schedule(3, 10, Order::kShuffle, 7), build_schedule(3, 10, Order::kShuffle, 7));
    EXPECT_NE(build_schedule(3, 10, Order::kShuffle, 7), build_schedule(3, 10, Order::kShuffle, 8));
    // Over many repetitions every phase comes first about equally often: position is not
    // confounded with condition.
    std::map<uint32_t, int> first;
    auto s = build_schedule(3, 3000, Order::kShuffle, 1);
    for (size_t i = 0; i < s.size(); i += 3) first[s[i].phase]++;
    for (uint32_t p = 0; p < 3; ++p) EXPECT_NEAR(first[p], 1000, 100) << p;
}

TEST(Schedule, OrderNames) {
    EXPECT_EQ(parse_order("abba"), Order::kAbba);
    EXPECT_EQ(parse_order("shuffle"), Order::kShuffle);
    EXPECT_STREQ(order_name(Order::kShuffle), "shuffle");
    EXPECT_THROW(parse_order("ABBA"), std::invalid_argument);
}

}  // namespace
}  // namespace spinlab::run
