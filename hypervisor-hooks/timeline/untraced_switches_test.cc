// untraced_switches: the holes of the trace filled from switch records, and only the holes;
// end to end through build_run_intervals, the timeline has no unknown span left.
#include "untraced_switches.h"

#include <gtest/gtest.h>

#include "run_intervals.h"

namespace spinlab::load {
namespace {

SchedSwitch sw(uint64_t ts, int prev, const char* state, int next, int cpu = 0) {
    return {ts, cpu, prev, state, next};
}
SwitchRecord in(int tid, uint64_t ts, int cpu = 0) { return {tid, ts, cpu, true, false}; }
SwitchRecord out(int tid, uint64_t ts, bool preempt = true, int cpu = 0) { return {tid, ts, cpu, false, preempt}; }

// Thread 7 as the kernel traced it on these machines: it leaves at 200 for a task whose own
// switches are never traced (pid 70), gets the CPU back from it at 260 (not traced) and leaves
// again at 400. The records have every switch, each a little after the tracepoint.
const std::vector<SchedSwitch> kHoleyTrace = {sw(100, 0, "R", 7), sw(200, 7, "R+", 70), sw(400, 7, "S", 0)};
const std::vector<SwitchRecord> kRecords = {in(7, 101), out(7, 201), in(7, 261), out(7, 401, false)};

TEST(UntracedSwitches, FillsTheSwitchInBetweenTwoSwitchOuts) {
    AddedSwitches a = untraced_switches(kHoleyTrace, kRecords, {7}, 0, 1000);
    ASSERT_EQ(a.events.size(), 1u);
    EXPECT_EQ(a.switch_ins, 1u);
    EXPECT_EQ(a.switch_outs, 0u);
    EXPECT_EQ(a.events[0].ts, 261u);
    EXPECT_EQ(a.events[0].next_pid, 7);
    EXPECT_EQ(a.events[0].prev_pid, kUntracedPid);
}

TEST(UntracedSwitches, TheTimelineThenHasNoUnknownSpan) {
    std::vector<SchedSwitch> events = kHoleyTrace;
    auto before = build_run_intervals(events, {{7, 0, {}}}, 0, 1000);
    size_t unknown_before = 0;
    for (const RunInterval& r : before) unknown_before += r.state == RunState::kUnknown;
    EXPECT_EQ(unknown_before, 1u) << "the hole itself";

    AddedSwitches a = untraced_switches(events, kRecords, {7}, 0, 1000);
    events.insert(events.end(), a.events.begin(), a.events.end());
    auto r = build_run_intervals(events, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 5u);
    for (const RunInterval& i : r) EXPECT_NE(i.state, RunState::kUnknown) << i.start;
    EXPECT_EQ(r[2].state, RunState::kOff);
    EXPECT_EQ(r[2].reason, "R+");
    EXPECT_EQ(r[2].end, 261u);
    EXPECT_EQ(r[3].state, RunState::kOn);
    EXPECT_EQ(r[3].start, 261u);
    EXPECT_EQ(r[3].end, 400u);
}

TEST(UntracedSwitches, AddsNothingWhereTheTraceIsComplete) {
    std::vector<SchedSwitch> trace = {sw(100, 0, "R", 7), sw(200, 7, "R+", 70), sw(260, 0, "R", 7),
                                      sw(400, 7, "S", 0)};
    EXPECT_TRUE(untraced_switches(trace, kRecords, {7}, 0, 1000).events.empty());
}

TEST(UntracedSwitches, FillsAMissingSwitchOutWithPerfsState) {
    // In at 100, in again at 500: it left at 300, preempted or not as the record says.
    std::vector<SchedSwitch> trace = {sw(100, 0, "R", 7), sw(500, 0, "R", 7)};
    AddedSwitches a = untraced_switches(trace, {in(7, 101), out(7, 300, false), in(7, 501)}, {7}, 0, 1000);
    ASSERT_EQ(a.events.size(), 1u);
    EXPECT_EQ(a.switch_outs, 1u);
    EXPECT_EQ(a.events[0].prev_pid, 7);
    EXPECT_EQ(a.events[0].next_pid, kUntracedPid);
    EXPECT_EQ(a.events[0].prev_state, "blocked");
    a = untraced_switches(trace, {out(7, 300, true)}, {7}, 0, 1000);
    ASSERT_EQ(a.events.size(), 1u);
    EXPECT_EQ(a.events[0].prev_state, "R");
}

TEST(UntracedSwitches, WindowEdges) {
    // First traced switch is a switch-out, but the thread came in at 50 untraced: it was off
    // from the start. After its last traced switch-out it came in at 900 untraced.
    std::vector<SchedSwitch> trace = {sw(200, 7, "R+", 70)};
    AddedSwitches a = untraced_switches(trace, {in(7, 50), out(7, 201), in(7, 900), in(7, 2000)}, {7}, 10, 1000);
    ASSERT_EQ(a.events.size(), 2u);
    EXPECT_EQ(a.events[0].ts, 50u);
    EXPECT_EQ(a.events[1].ts, 900u) << "records after the window are not used";
}

TEST(UntracedSwitches, AThreadWithoutTracedSwitchesGetsAllItsRecords) {
    AddedSwitches a = untraced_switches({sw(100, 8, "R", 0)}, {in(7, 50), out(7, 70), in(8, 30)}, {7}, 0, 1000);
    ASSERT_EQ(a.events.size(), 2u);
    EXPECT_EQ(a.switch_ins, 1u);
    EXPECT_EQ(a.switch_outs, 1u);
}

TEST(UntracedSwitches, RunningStampsAreNotSwitches) {
    SchedSwitch stamp = sw(300, 7, "", 7);
    stamp.running_stamp = true;
    // Out at 200, a stamp at 300, out at 400: still a missing switch-in, found at 260.
    AddedSwitches a = untraced_switches({sw(100, 0, "R", 7), sw(200, 7, "R", 70), stamp, sw(400, 7, "S", 0)},
                                        kRecords, {7}, 0, 1000);
    ASSERT_EQ(a.events.size(), 1u);
    EXPECT_EQ(a.events[0].ts, 261u);
}

}  // namespace
}  // namespace spinlab::load
