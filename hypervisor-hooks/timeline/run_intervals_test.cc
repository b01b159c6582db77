#include "run_intervals.h"

#include <gtest/gtest.h>

#include "hypervisor-hooks/common/fs_util.h"

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
    EXPECT_EQ(r[0].state, RunState::kOn);
    EXPECT_EQ(r[0].start, 100u);
    EXPECT_EQ(r[0].end, 150u);
    EXPECT_EQ(r[1].state, RunState::kOff);
    EXPECT_EQ(r[1].reason, "R+");
    EXPECT_EQ(r[1].end, 300u);
    EXPECT_EQ(r[2].state, RunState::kOn);
    EXPECT_EQ(r[2].cpu, 1);
    EXPECT_EQ(r[2].end, 700u);
    EXPECT_EQ(r[3].state, RunState::kOff);
    EXPECT_EQ(r[3].reason, "S");
    EXPECT_EQ(r[3].end, 1000u);
}

TEST(RunIntervals, OffAtStartWhenTheFirstEventSwitchesIn) {
    auto r = build_run_intervals({sw(400, 0, "R", 7)}, {{7, 2, std::nullopt}}, 100, 1000);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].state, RunState::kOff);
    EXPECT_EQ(r[0].reason, "start");
    EXPECT_EQ(r[0].vcpu, 2);
    EXPECT_EQ(r[1].state, RunState::kOn);
    EXPECT_EQ(r[1].start, 400u);
}

TEST(RunIntervals, TwoTracedThreadsSwitchingWithEachOther) {
    auto r = build_run_intervals({sw(500, 7, "R+", 8)}, {{7, 0, {}}, {8, 1, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].state, RunState::kOn);   // 7 on [0,500)
    EXPECT_EQ(r[1].state, RunState::kOff);  // 7 off [500,1000)
    EXPECT_EQ(r[2].state, RunState::kOff);  // 8 off [0,500)
    EXPECT_EQ(r[3].state, RunState::kOn);   // 8 on [500,1000)
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
    bool last_on = r.front().state != RunState::kOn;
    for (const RunInterval& i : r) {
        EXPECT_EQ(i.start, at);
        EXPECT_NE(i.state == RunState::kOn, last_on) << "states alternate";
        at = i.end;
        last_on = i.state == RunState::kOn;
    }
    EXPECT_EQ(at, 1000u);
}

// The tiling check of every test below: intervals of one thread cover [from, to) exactly.
void expect_tiles(const std::vector<RunInterval>& r, uint64_t from, uint64_t to) {
    uint64_t at = from;
    for (const RunInterval& i : r) {
        EXPECT_EQ(i.start, at) << run_state_name(i.state);
        at = i.end;
    }
    EXPECT_EQ(at, to);
}

TEST(RunIntervals, SwitchInNotTracedIsUnknownAfterTheCpusLastEvent) {
    // As on these machines: 7 leaves CPU 1 for a task whose switches are never traced (99), and
    // later leaves CPU 1 again with no switch-in between. Thread 8's switch on CPU 1 at 400 says
    // CPU 1 was busy with others until 400 at least; one on CPU 0 at 600 says nothing about CPU 1.
    std::vector<SchedSwitch> ev = {sw(200, 7, "R+", 99, 1), sw(400, 8, "S", 5, 1), sw(600, 8, "S", 5, 0),
                                   sw(700, 7, "R+", 5, 1)};
    auto r = build_run_intervals(ev, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].state, RunState::kOn);  // [0, 200)
    EXPECT_EQ(r[1].state, RunState::kOff);
    EXPECT_EQ(r[1].start, 200u);
    EXPECT_EQ(r[1].end, 400u);
    EXPECT_EQ(r[2].state, RunState::kUnknown);
    EXPECT_EQ(r[2].reason, "switch-in not traced");
    EXPECT_EQ(r[2].end, 700u);
    EXPECT_EQ(r[3].state, RunState::kOff);  // [700, 1000)
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, SwitchInNotTracedWithNoOtherEventIsUnknownFromTheSwitchOut) {
    auto r = build_run_intervals({sw(200, 7, "R+", 99, 1), sw(700, 7, "R+", 5, 1)}, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[1].state, RunState::kUnknown);
    EXPECT_EQ(r[1].start, 200u);
    EXPECT_EQ(r[1].end, 700u);
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, SwitchOutNotTracedIsUnknownUntilTheNextSwitchIn) {
    auto r = build_run_intervals({sw(200, 5, "R", 7, 0), sw(600, 5, "R", 7, 1)}, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].state, RunState::kOff);
    EXPECT_EQ(r[1].state, RunState::kUnknown);
    EXPECT_EQ(r[1].reason, "switch-out not traced");
    EXPECT_EQ(r[1].start, 200u);
    EXPECT_EQ(r[1].end, 600u);
    EXPECT_EQ(r[2].state, RunState::kOn);
    EXPECT_EQ(r[2].cpu, 1);
    expect_tiles(r, 0, 1000);
}

SchedSwitch stamp(uint64_t ts, int tid, int cpu) {
    SchedSwitch e{ts, cpu, tid, "", tid};
    e.running_stamp = true;
    return e;
}

TEST(RunIntervals, RunningStampsNarrowAnUntracedSwitchIn) {
    // Out at 200 on CPU 1, the switch-in not traced; a timer interrupt in its context at 300
    // says it was on by then; more stamps change nothing; out at 700.
    std::vector<SchedSwitch> ev = {sw(200, 7, "R+", 99, 1), stamp(300, 7, 1), stamp(500, 7, 1),
                                   sw(700, 7, "R+", 5, 1)};
    auto r = build_run_intervals(ev, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);  // on, unknown, on, off
    EXPECT_EQ(r[1].state, RunState::kUnknown);
    EXPECT_EQ(r[1].start, 200u);
    EXPECT_EQ(r[1].end, 300u);
    EXPECT_EQ(r[2].state, RunState::kOn);
    EXPECT_EQ(r[2].start, 300u);
    EXPECT_EQ(r[2].end, 700u);
    EXPECT_EQ(r[2].cpu, 1);
    EXPECT_EQ(r[3].state, RunState::kOff);
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, RunningStampsNarrowAnUntracedSwitchOut) {
    // In at 200, a stamp at 350, then in again at 600 with no switch-out traced: on to 350.
    auto r = build_run_intervals({sw(200, 5, "R", 7, 0), stamp(350, 7, 0), sw(600, 5, "R", 7, 1)},
                                 {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[1].state, RunState::kOn);
    EXPECT_EQ(r[1].end, 350u);
    EXPECT_EQ(r[2].state, RunState::kUnknown);
    EXPECT_EQ(r[2].end, 600u);
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, AStampAsTheFirstEventMeansOnSinceTheWindowStart) {
    // As a first switch-out does: nothing before it switched the thread in. (Seen beside a busy
    // loop: a busy thread's first event was a timer stamp 0.9 ms into the window, no perf record
    // before it, and the time before it was called unknown.)
    auto r = build_run_intervals({stamp(300, 7, 0), sw(500, 7, "S", 5, 0)}, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].state, RunState::kOn);
    EXPECT_EQ(r[0].start, 0u);
    EXPECT_EQ(r[0].end, 500u);
    EXPECT_EQ(r[0].cpu, 0);
    EXPECT_EQ(r[1].state, RunState::kOff);
    expect_tiles(r, 0, 1000);
    // A stamp after a switch-out with no switch-in between still leaves that switch-in unknown.
    r = build_run_intervals({sw(100, 7, "R", 5, 0), sw(200, 5, "R", 6, 1), stamp(300, 7, 1)}, {{7, 0, {}}}, 0, 1000);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[2].state, RunState::kUnknown);
    EXPECT_EQ(r[2].end, 300u);
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, UnknownTimeInsideAFreezeIsFrozen) {
    auto r = build_run_intervals({sw(200, 7, "D", 99, 1), sw(700, 7, "R+", 5, 1)}, {{7, 0, {}}}, 0, 1000);
    r = mark_frozen(r, {{7, 150, 500}});
    std::vector<RunState> states;
    for (const RunInterval& i : r) states.push_back(i.state);
    // The on and the unknown interval each get their frozen part.
    EXPECT_EQ(states, (std::vector<RunState>{RunState::kOn, RunState::kFrozen, RunState::kFrozen, RunState::kUnknown,
                                             RunState::kOff}));
    expect_tiles(r, 0, 1000);
}

TEST(RunIntervals, NoEventsUseTheHintAndSaySo) {
    auto r = build_run_intervals({}, {{7, 0, true}, {8, 1, std::nullopt}}, 0, 50);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].state, RunState::kOn);
    EXPECT_EQ(r[0].reason, "no-switch");
    EXPECT_EQ(r[1].state, RunState::kOff);
}

TEST(RunIntervals, EventsOfOtherThreadsAreIgnoredAndBadWindowRejected) {
    auto r = build_run_intervals({sw(10, 1, "R", 2)}, {{7, 0, false}}, 0, 100);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_THROW(build_run_intervals({}, {}, 10, 5), LoadError);
}

TEST(RunIntervals, CsvIsTheResultsTimelineWithBothClocks) {
    auto r = build_run_intervals({sw(500, 7, "R+", 0)}, {{7, 0, {}}}, 0, 1000);
    r[1].preemptor_comm = "a, \"b\"";  // a comm with a comma and quotes is quoted
    std::string csv = run_intervals_csv_header() +
                      format_run_intervals_csv(r, {"host-load", 2}, [](uint64_t tsc) { return tsc * 2; });
    EXPECT_EQ(csv,
              "vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,start_ns,end_ns,reason,cpu,"
              "preemptor,preemptor_vm,preemptor_vcpu,preemptor_pid,preemptor_comm\n"
              "0,7,on,0,500,host-load,2,0,1000,,0,,,,,\n"
              "0,7,off,500,1000,host-load,2,1000,2000,R+,-1,unknown,,,0,\"a, \"\"b\"\"\"\n");
    r[1].preemptor = spinlab::PreemptorClass::kPreemptorNeighbourVcpu;
    r[1].preemptor_vm = "vm2";
    r[1].preemptor_vcpu = 1;
    r[1].preemptor_comm = "CPU 1/TCG";
    EXPECT_EQ(format_run_intervals_csv(r, {}, {}),
              "0,7,on,0,500,,0,,,,0,,,,,\n0,7,off,500,1000,,0,,,R+,-1,neighbour-vcpu,vm2,1,0,CPU 1/TCG\n");
}

// Thread 7: on [0,100) off [100,400) on [400,1000); thread 8 off the whole window.
std::vector<RunInterval> two_threads() {
    return build_run_intervals({sw(100, 7, "S", 9), sw(400, 9, "R", 7)}, {{7, 0, true}, {8, 1, false}}, 0,
                               1000);
}

std::string states(const std::vector<RunInterval>& r) {
    std::string s;
    for (const RunInterval& i : r)
        s += std::to_string(i.tid) + ":" + run_state_name(i.state) + "[" + std::to_string(i.start) + "," +
             std::to_string(i.end) + ") ";
    return s;
}

TEST(RunIntervals, FrozenSpanSplitsOffAndOnParts) {
    // Effective window [120, 450): the off interval's part inside it is frozen, and so is the
    // on part up to 450 (the kernel's path into the freezer, no guest code).
    auto r = mark_frozen(two_threads(), {{7, 120, 450}});
    EXPECT_EQ(states(r), "7:on[0,100) 7:off[100,120) 7:frozen[120,400) 7:frozen[400,450) 7:on[450,1000) "
                         "8:off[0,1000) ");
}

TEST(RunIntervals, FrozenSpansOfOtherThreadsAndOutsideTheWindowChangeNothing) {
    auto before = two_threads();
    EXPECT_EQ(states(mark_frozen(before, {{9, 0, 1000}, {7, 1000, 2000}})), states(before));
}

TEST(RunIntervals, OverlappingAndUnendedSpans) {
    // Two overlapping spans count once; an unended span (not resumed) runs to the window end.
    auto r = mark_frozen(two_threads(), {{8, 200, 300}, {8, 250, 350}, {7, 900, UINT64_MAX}});
    EXPECT_EQ(states(r), "7:on[0,100) 7:off[100,400) 7:on[400,900) 7:frozen[900,1000) "
                         "8:off[0,200) 8:frozen[200,350) 8:off[350,1000) ");
}

}  // namespace
}  // namespace spinlab::load
