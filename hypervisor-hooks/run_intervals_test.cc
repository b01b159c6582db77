#include "run_intervals.h"

#include <gtest/gtest.h>

#include "fs_util.h"

namespace spinlab::load {
namespace {

SchedSwitch sw(uint64_t ts, int prev, const char* state, int next, int cpu = 0) {
    return {ts, cpu, prev, state, next};
}

TEST(RunIntervals, FirstEventTellsTheStateBeforeIt) {
    // 7 leaves at 150 (so it ran since the window start), comes back at 300, leaves frozen at 700.
    std::vector<SchedSwitch> ev = {sw(300, 0, "R", 7, 1), sw(150, 7, "R+", 0), sw(700, 7, "S", 9, 1)};
    auto r = build_run_intervals(ev, {{7, 0, std::nullopt}}, 100, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_TRUE(r[0].on);
    EXPECT_EQ(r[0].start, 100u);
    EXPECT_EQ(r[0].end, 150u);
    EXPECT_FALSE(r[1].on);
    EXPECT_EQ(r[1].reason, "R+");
    EXPECT_EQ(r[1].end, 300u);
    EXPECT_TRUE(r[2].on);
    EXPECT_EQ(r[2].cpu, 1);
    EXPECT_EQ(r[2].end, 700u);
    EXPECT_FALSE(r[3].on);
    EXPECT_EQ(r[3].reason, "S");
    EXPECT_EQ(r[3].end, 1000u);
}

TEST(RunIntervals, OffAtStartWhenTheFirstEventSwitchesIn) {
    auto r = build_run_intervals({sw(400, 0, "R", 7)}, {{7, 2, std::nullopt}}, 100, 1000);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_FALSE(r[0].on);
    EXPECT_EQ(r[0].reason, "start");
    EXPECT_EQ(r[0].vcpu, 2);
    EXPECT_TRUE(r[1].on);
    EXPECT_EQ(r[1].start, 400u);
}

TEST(RunIntervals, TwoTracedThreadsSwitchingWithEachOther) {
    auto r = build_run_intervals({sw(500, 7, "R+", 8)}, {{7, 0, {}}, {8, 1, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_TRUE(r[0].on);   // 7 on [0,500)
    EXPECT_FALSE(r[1].on);  // 7 off [500,1000)
    EXPECT_FALSE(r[2].on);  // 8 off [0,500)
    EXPECT_TRUE(r[3].on);   // 8 on [500,1000)
    EXPECT_EQ(r[3].tid, 8);
}

TEST(RunIntervals, IntervalsTileTheWindowWithoutGaps) {
    std::vector<SchedSwitch> ev;
    for (uint64_t t = 10; t < 1000; t += 20) {
        ev.push_back(sw(t, 7, "R", 0));
        ev.push_back(sw(t + 7, 0, "R", 7));
    }
    auto r = build_run_intervals(ev, {{7, 0, {}}}, 0, 1000);
    uint64_t at = 0;
    bool last_on = !r.front().on;
    for (const RunInterval& i : r) {
        EXPECT_EQ(i.start, at);
        EXPECT_NE(i.on, last_on) << "states alternate";
        at = i.end;
        last_on = i.on;
    }
    EXPECT_EQ(at, 1000u);
}

TEST(RunIntervals, NoEventsUseTheHintAndSaySo) {
    auto r = build_run_intervals({}, {{7, 0, true}, {8, 1, std::nullopt}}, 0, 50);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(r[0].on);
    EXPECT_EQ(r[0].reason, "no-switch");
    EXPECT_FALSE(r[1].on);
}

TEST(RunIntervals, EventsOfOtherThreadsAreIgnoredAndBadWindowRejected) {
    auto r = build_run_intervals({sw(10, 1, "R", 2)}, {{7, 0, false}}, 0, 100);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_THROW(build_run_intervals({}, {}, 10, 5), LoadError);
}

TEST(RunIntervals, CsvHasBothClocks) {
    auto r = build_run_intervals({sw(500, 7, "R+", 0)}, {{7, 0, {}}}, 0, 1000);
    std::string csv = format_run_intervals_csv(r, [](uint64_t tsc) { return tsc * 2; });
    EXPECT_EQ(csv,
              "tid,vcpu,state,start_tsc,end_tsc,start_ns,end_ns,reason,cpu\n"
              "7,0,on,0,500,0,1000,,0\n"
              "7,0,off,500,1000,1000,2000,R+,-1\n");
}

}  // namespace
}  // namespace spinlab::load
