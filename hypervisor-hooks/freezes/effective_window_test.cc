#include "effective_window.h"

#include <gtest/gtest.h>

namespace spinlab::load {
namespace {

constexpr int kTid = 77;
SchedSwitch out(uint64_t ts, const char* state = "S") { return {ts, 0, kTid, state, 0}; }
SchedSwitch in(uint64_t ts) { return {ts, 1, 0, "R", kTid}; }

ThreadSwitches with(std::vector<SchedSwitch> events) {
    ThreadSwitches s(kTid);
    s.add(events);
    return s;
}

TEST(EffectiveWindow, RunningThreadStopsAtItsSwitchOutAndResumesAtItsSwitchIn) {
    // Freeze requested at 100, the thread switches out at 130; thaw at 1000, on CPU at 1040.
    ThreadSwitches s = with({in(10), out(130), in(1040), out(2000, "R")});
    ASSERT_TRUE(s.resumed_after(1000));
    EffectiveWindow w = s.window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 130u);
    EXPECT_EQ(w.resumed, 1040u);
}

TEST(EffectiveWindow, ThreadWaitingForACpuAtTheRequestIsStoppedFromTheRequest) {
    // Preempted at 50 (R+), never on CPU again until after the thaw.
    EffectiveWindow w = with({out(50, "R+"), in(1100)}).window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 100u);
    EXPECT_EQ(w.resumed, 1100u);
}

TEST(EffectiveWindow, TheKernelPathIntoTheFreezerDoesNotMoveTheStart) {
    // Waiting for a CPU at the request; gets one at 400 only to enter the freezer (out at 410).
    EffectiveWindow w = with({out(50, "R"), in(400), out(410, "S"), in(1010)}).window(100, 105, 1000);
    EXPECT_EQ(w.stopped, 100u);
    EXPECT_EQ(w.resumed, 1010u);
    // On CPU at the request, preempted at 130, back at 400 into the freezer: stopped at 130.
    w = with({in(10), out(130, "R+"), in(400), out(410, "D"), in(1010)}).window(100, 105, 1000);
    EXPECT_EQ(w.stopped, 130u);
}

TEST(EffectiveWindow, OffSinceBeforeTracingBeganCountsFromTheRequest) {
    EffectiveWindow w = with({in(1200)}).window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 100u);
    EXPECT_EQ(w.resumed, 1200u);
}

TEST(EffectiveWindow, ASlowFreezeWriteCountsUntilTheThreadsLastRunBeforeItReturned) {
    // Off at the request (100), on CPU at 150-180 while the write was still in progress
    // (returned at 400): it may have run user code until 180.
    EffectiveWindow w = with({out(50, "R"), in(150), out(180, "R"), in(1020)}).window(100, 400, 1000);
    EXPECT_EQ(w.stopped, 180u);
    // On CPU when the write returned: stopped at its next switch-out.
    w = with({out(50, "R"), in(150), out(450, "S"), in(1020)}).window(100, 400, 1000);
    EXPECT_EQ(w.stopped, 450u);
}

TEST(EffectiveWindow, OnTheFreezerPathAtTheThawItResumesAtTheThaw) {
    // Waiting for a CPU since before the request; got one 7 ticks before the thaw request.
    EffectiveWindow w = with({out(50, "R"), in(993), out(1010, "S"), in(1020)}).window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 100u);
    EXPECT_EQ(w.resumed, 1000u);
}

TEST(EffectiveWindow, ASwitchInTheTraceDoesNotHaveNeverWidensTheWindow) {
    // Out at 50, then out again at 300 with no switch-in traced between: the thread may have
    // been on CPU at the mark (105), so the freeze is known to hold only from 300. After the
    // thaw (1000) it switches out at 1200 with no switch-in traced: it may have run from the
    // thaw on, so the window ends at the thaw, not at the next traced switch-in (1500).
    EffectiveWindow w = with({out(50, "R"), out(300, "S"), out(1200, "R"), in(1500)}).window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 300u);
    EXPECT_EQ(w.resumed, 1000u);
}

TEST(EffectiveWindow, TheKernelsFrozenReportSettlesAnUntracedSwitchInAtTheMark) {
    // Seen on a real run: the thread switched out into the freezer at 150, inside the freeze
    // write (100..400); its next traced switch is a switch-out at 1200, after the thaw (1000),
    // so a switch-in was not traced. The trace alone cannot say it was off at the mark...
    auto s = with({in(10), out(150, "S"), out(1200, "R"), in(1500)});
    EXPECT_EQ(s.window(100, 400, 1000).status, EffectiveStatus::kNeverStopped);
    // ... but the kernel reported the cgroup frozen at 410: off from its switch-out at 150.
    EffectiveWindow w = s.window(100, 400, 1000, 410);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 150u);
    EXPECT_EQ(w.resumed, 1000u) << "the untraced switch-in may have come at the thaw";
    // A frozen report after the thaw settles nothing.
    EXPECT_EQ(s.window(100, 400, 1000, 1001).status, EffectiveStatus::kNeverStopped);
    // Nor when the thread was certainly on CPU at the mark (its last switch is a switch-in):
    // the trace and the kernel disagree, and nothing is guessed.
    EXPECT_EQ(with({out(50, "R"), in(300), out(1200, "R")}).window(100, 400, 1000, 410).status,
              EffectiveStatus::kNeverStopped);
    // With a switch-out between the mark and the thaw, that switch-out is the stop, as before.
    w = with({out(150, "R"), out(600, "S"), out(1200, "R")}).window(100, 400, 1000, 610);
    EXPECT_EQ(w.stopped, 600u);
}

TEST(EffectiveWindow, ThreadOnCpuThroughoutWasNeverStopped) {
    ThreadSwitches s = with({in(10), out(2000, "R")});
    EXPECT_EQ(s.window(100, 105, 1000).status, EffectiveStatus::kNeverStopped);
    EXPECT_EQ(s.window(100, 105, 1000).stopped, 0u);
    EXPECT_EQ(with({out(3000, "R")}).window(100, 105, 1000).status, EffectiveStatus::kNeverStopped);
}

TEST(EffectiveWindow, NoSwitchInAfterTheThawIsNotResumed) {
    ThreadSwitches s = with({in(10), out(130)});
    EXPECT_FALSE(s.resumed_after(1000));
    EffectiveWindow w = s.window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kNotResumed);
    EXPECT_EQ(w.stopped, 130u);
    EXPECT_EQ(w.resumed, 0u);
}

TEST(EffectiveWindow, NoEventsAtAllIsUnknown) {
    EffectiveWindow w = with({}).window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kNoEvents);
    EXPECT_STREQ(effective_status_name(w.status), "no-events");
}

TEST(EffectiveWindow, OtherThreadsEventsAndOutOfOrderReadsAreHandled) {
    ThreadSwitches s(kTid);
    s.add({in(1040), {5, 0, 12, "R", 13}});
    s.add({out(130), in(10)});  // a later read with earlier events
    EffectiveWindow w = s.window(100, 105, 1000);
    EXPECT_EQ(w.stopped, 130u);
    EXPECT_EQ(w.resumed, 1040u);
}

TEST(EffectiveWindow, DroppingFinishedEventsKeepsTheStateForTheNextWindow) {
    ThreadSwitches s = with({in(10), out(130), in(1040), out(2100), in(3050)});
    s.drop_before(1000);
    EffectiveWindow w = s.window(2000, 2005, 3000);
    EXPECT_EQ(w.stopped, 2100u);
    EXPECT_EQ(w.resumed, 3050u);
    s.drop_before(3000);
    // The kept event (out at 2100) still says the thread was off before 3050.
    EXPECT_EQ(s.window(2000, 2005, 3000).status, EffectiveStatus::kOk);
}

TEST(EffectiveWindow, ARecordedSwitchInFillsTheTracesHoleAfterTheThaw) {
    // Into the freezer at 130; thawed at 1000; the switch-in at 1040 is not traced (the CPU came
    // from a task whose switches the kernel never emits), the next switch-out at 1500 is.
    std::vector<SchedSwitch> trace = {in(10), out(130), out(1500, "R")};
    EffectiveWindow without = with(trace).window(100, 105, 1000);
    EXPECT_EQ(without.resumed, 1000u) << "the trace alone: it may have run from the thaw on";
    ThreadSwitches s = with(trace);
    s.add_recorded_ins({11, 1041});  // perf's, each a little after the tracepoint would be
    ASSERT_TRUE(s.resumed_after(1000));
    EffectiveWindow w = s.window(100, 105, 1000);
    EXPECT_EQ(w.status, EffectiveStatus::kOk);
    EXPECT_EQ(w.stopped, 130u);
    EXPECT_EQ(w.resumed, 1041u);
}

TEST(EffectiveWindow, RecordedSwitchInsTheTraceHasChangeNothing) {
    ThreadSwitches s = with({in(10), out(130), in(1040), out(2000, "R")});
    s.add_recorded_ins({11, 1041});
    EffectiveWindow w = s.window(100, 105, 1000);
    EXPECT_EQ(w.stopped, 130u);
    EXPECT_EQ(w.resumed, 1040u);
}

TEST(EffectiveWindow, ARecordedSwitchInStillFillsAfterOlderWindowsAreDropped) {
    ThreadSwitches s = with({in(10), out(130), out(1500, "R"), in(3000), out(3100)});
    s.add_recorded_ins({11, 1041, 3001});
    s.drop_before(900);  // the window before 900 is finished; 130 stays: it gives the state
    EXPECT_EQ(s.window(100, 105, 1000).resumed, 1041u);
}

}  // namespace
}  // namespace spinlab::load
