#include "sched_switch_parse.h"

#include <gtest/gtest.h>

#include "fs_util.h"

namespace spinlab::load {
namespace {

// Lines as this machine's kernel (6.18) prints them, with the x86-tsc clock.
const char* kOut =
    "         python3-8657    [001] d..2. 1073392736050: sched_switch: prev_comm=python3 "
    "prev_pid=8657 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=41 next_prio=120";
const char* kIn =
    "     kworker/1:1-41      [001] d..2. 1073406404649: sched_switch: prev_comm=kworker/1:1 "
    "prev_pid=41 prev_prio=120 prev_state=I ==> next_comm=python3 next_pid=8657 next_prio=120";

TEST(SchedSwitchLine, ParsesAllFields) {
    auto ev = parse_sched_switch_line(kOut);
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->ts, 1073392736050u);
    EXPECT_EQ(ev->cpu, 1);
    EXPECT_EQ(ev->prev_pid, 8657);
    EXPECT_EQ(ev->prev_state, "R");
    EXPECT_EQ(ev->next_pid, 41);
}

TEST(SchedSwitchLine, CommsWithSpacesAsQemuNamesVcpus) {
    auto ev = parse_sched_switch_line(
        "       CPU 0/TCG-4242    [000] d..2. 99: sched_switch: prev_comm=CPU 0/TCG prev_pid=4242 "
        "prev_prio=120 prev_state=R+ ==> next_comm=CPU 1/TCG next_pid=4243 next_prio=120");
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->prev_pid, 4242);
    EXPECT_EQ(ev->prev_state, "R+");
    EXPECT_EQ(ev->next_pid, 4243);
    EXPECT_EQ(ev->cpu, 0);
}

TEST(SchedSwitchLine, NanosecondClocksBecomeNanoseconds) {
    auto ev = parse_sched_switch_line(
        "  a-1 [003] d..2. 1234.000567: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 "
        "prev_state=S ==> next_comm=b next_pid=2 next_prio=120");
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->ts, 1234000567000u);
}

TEST(SchedSwitchLine, OtherLinesAreNotEvents) {
    EXPECT_FALSE(parse_sched_switch_line("# tracer: nop"));
    EXPECT_FALSE(parse_sched_switch_line(
        "            bash-8770    [000] ...1. 1073769007805: tracing_mark_write: hello"));
    EXPECT_FALSE(parse_sched_switch_line(""));
}

TEST(SchedSwitchLine, MalformedRecordsAreErrorsNotSilence) {
    EXPECT_THROW(parse_sched_switch_line("x [001] d..2. 12: sched_switch: prev_comm=a prev_pid=z "
                                         "prev_state=R ==> next_comm=b next_pid=2"),
                 LoadError);
    EXPECT_THROW(parse_sched_switch_line("x [001] d..2. 12: sched_switch: prev_comm=a prev_pid=1"),
                 LoadError);
    EXPECT_THROW(parse_sched_switch_line("x d..2. 12: sched_switch: prev_comm=a prev_pid=1 "
                                         "prev_state=R ==> next_comm=b next_pid=2"),
                 LoadError);
}

TEST(LostEvents, AreCounted) {
    EXPECT_EQ(parse_lost_events_line("CPU:1 [LOST 42 EVENTS]"), 42u);
    EXPECT_FALSE(parse_lost_events_line("CPU:1 [LOST x EVENTS]"));
}

TEST(SchedSwitchParser, JoinsLinesSplitAcrossReads) {
    std::string text = std::string(kOut) + "\n" + kIn + "\nCPU:0 [LOST 3 EVENTS]\n# comment\n";
    for (size_t cut = 1; cut < text.size(); cut += 37) {
        SchedSwitchParser p;
        p.feed(std::string_view(text).substr(0, cut));
        p.feed(std::string_view(text).substr(cut));
        p.finish();
        ASSERT_EQ(p.events().size(), 2u) << "cut at " << cut;
        EXPECT_EQ(p.events()[1].next_pid, 8657);
        EXPECT_EQ(p.lost_events(), 3u);
        EXPECT_EQ(p.other_lines(), 1u);
    }
}

TEST(SchedSwitchParser, FinishParsesALastLineWithoutNewline) {
    SchedSwitchParser p;
    p.feed(kOut);
    EXPECT_TRUE(p.events().empty());
    p.finish();
    EXPECT_EQ(p.events().size(), 1u);
}

TEST(SchedSwitchParser, TimerEntryIsARunningStampOfTheTaskInItsHeader) {
    // A comm with a space and a '-' (QEMU's vCPU threads, and others): the pid is after the last '-'.
    auto ev = parse_running_stamp_line(
        "      CPU 0/TCG-x-4242    [001] d.h.. 84778767687718: local_timer_entry: vector=236");
    ASSERT_TRUE(ev);
    EXPECT_TRUE(ev->running_stamp);
    EXPECT_EQ(ev->prev_pid, 4242);
    EXPECT_EQ(ev->next_pid, 4242);
    EXPECT_EQ(ev->cpu, 1);
    EXPECT_EQ(ev->ts, 84778767687718u);
    EXPECT_FALSE(parse_running_stamp_line(kOut));
    EXPECT_FALSE(parse_sched_switch_line("  yes-1 [000] d.h.. 5: local_timer_entry: vector=236"));
    EXPECT_THROW(parse_running_stamp_line("yes [000] d.h.. 5: local_timer_entry: vector=236"), LoadError);
    SchedSwitchParser p;
    p.feed("  yes-17 [000] d.h.. 5: local_timer_entry: vector=236\n");
    ASSERT_EQ(p.events().size(), 1u);
    EXPECT_TRUE(p.events()[0].running_stamp);
    EXPECT_EQ(p.other_lines(), 0u);
}

}  // namespace
}  // namespace spinlab::load
