#include "sched_switch_parse.h"

#include <gtest/gtest.h>

#include "hypervisor-hooks/common/fs_util.h"

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
    EXPECT_EQ(ev->next_comm, "kworker/1:1");
}

TEST(SchedSwitchLine, CommsWithSpacesAsQemuNamesVcpus) {
    auto ev = parse_sched_switch_line(
        "       CPU 0/TCG-4242    [000] d..2. 99: sched_switch: prev_comm=CPU 0/TCG prev_pid=4242 "
        "prev_prio=120 prev_state=R+ ==> next_comm=CPU 1/TCG next_pid=4243 next_prio=120");
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->prev_pid, 4242);
    EXPECT_EQ(ev->prev_state, "R+");
    EXPECT_EQ(ev->next_pid, 4243);
    EXPECT_EQ(ev->next_comm, "CPU 1/TCG");
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

// events/sched/sched_switch/format of this machine's kernel, 6.18.44, as read from tracefs.
const std::string kFormat618 = R"FMT(name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio
)FMT";

TEST(SchedSwitchFormat, Linux618IsReadable) { EXPECT_NO_THROW(check_sched_switch_format(kFormat618)); }

TEST(SchedSwitchFormat, AMissingFieldOrPrintIsNamed) {
    auto message = [](const std::string& format) {
        try {
            check_sched_switch_format(format);
        } catch (const LoadError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::string no_field = kFormat618;
    no_field.replace(no_field.find(" next_pid;"), 10, " next_tid;");
    EXPECT_NE(message(no_field).find("next_pid"), std::string::npos) << message(no_field);
    std::string other_print = kFormat618;
    other_print.replace(other_print.find(" ==> "), 5, " -> ");
    EXPECT_NE(message(other_print).find("' ==> '"), std::string::npos) << message(other_print);
    EXPECT_NE(message("").find("prev_pid"), std::string::npos);
}

}  // namespace
}  // namespace spinlab::load
