// collector/trace/trace_groups_test.cc: the trace enable groups' names, both ways.
#include "trace_groups.h"

#include <gtest/gtest.h>
#include <spinlab/trace.h>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

TEST(TraceGroups, EveryGroupReadsBackAsItsOwnBit) {
    for (uint32_t i = 0; i < kTraceGroupCount; i++) {
        const std::string name = trace_group_name(i);
        EXPECT_EQ(trace_groups_text(1u << i), name);
        EXPECT_EQ(parse_trace_groups(name), 1u << i) << name;
    }
}

TEST(TraceGroups, ListsInBitOrderAndNoneForZero) {
    EXPECT_EQ(trace_groups_text(0), "none");
    EXPECT_EQ(parse_trace_groups("cswitch,spinlock"), parse_trace_groups("spinlock,cswitch"));
    EXPECT_EQ(trace_groups_text(parse_trace_groups("cswitch,spinlock")), "spinlock,cswitch");
    EXPECT_EQ(parse_trace_groups("all"), kTraceGroupAll);
    const std::string all = trace_groups_text(kTraceGroupAll);
    EXPECT_EQ(parse_trace_groups(all), kTraceGroupAll) << all;
}

// "longwait", the long-wait group's name until 2026-12, still reads (old specs and scripts);
// it is written under its name now.
TEST(TraceGroups, TheLongWaitGroupsOldNameStillReads) {
    EXPECT_EQ(parse_trace_groups("spinlock,longwait"), kTraceGroupSpinlock | kTraceGroupLongWait);
    EXPECT_EQ(trace_groups_text(parse_trace_groups("longwait")), "long-wait");
    EXPECT_EQ(trace_group_old_name(0), nullptr);
}

TEST(TraceGroups, AnUnknownGroupIsAUsageErrorNamingTheOptionAndTheWord) {
    try {
        parse_trace_groups("spinlock,locks", "--stack-enable");
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitUsage);
        const std::string said = e.what();
        EXPECT_EQ(said.rfind("--stack-enable: unknown group 'locks'; groups: all, ", 0), 0u)
            << said;
    }
    EXPECT_THROW(parse_trace_groups(""), CollectError);
    EXPECT_THROW(parse_trace_groups("spinlock,"), CollectError);
}

}  // namespace
}  // namespace spinlab::collect
