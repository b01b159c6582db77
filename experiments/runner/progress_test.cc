// experiments/runner/progress_test.cc: the progress line's text and its two modes.
#include "progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace spinlab::run {
namespace {

ProgressState state(double elapsed) {
    ProgressState s;
    s.phase = "host-load";
    s.rep = 2;
    s.repetitions = 3;
    s.slot = 4;
    s.slots = 6;
    s.step = "measuring";
    s.elapsed_s = elapsed;
    s.remaining_s = 70;
    s.ops_per_s = 1234567;
    return s;
}

TEST(Progress, Format) {
    EXPECT_EQ(format_progress(state(42)),
              "[4/6] host-load r2/3 measuring  elapsed 0:42  left 1:10  acq/s 1.23M");
    ProgressState counted = state(42);
    counted.unit = "hackbench runs";  // a Linux guest's workload, counted by its agent
    counted.ops_per_s = 2.4;
    EXPECT_EQ(format_progress(counted),
              "[4/6] host-load r2/3 measuring  elapsed 0:42  left 1:10  hackbench runs/s 2.40");
    EXPECT_EQ(format_duration(3725), "1:02:05");
    EXPECT_EQ(format_duration(-3), "0:00");
    EXPECT_EQ(format_rate(-1), "-");
    EXPECT_EQ(format_rate(950), "950");
    EXPECT_EQ(format_rate(0), "0.00");
    EXPECT_EQ(format_rate(12345), "12.3k");
    EXPECT_EQ(format_rate(2.5e9), "2.50G");
}

TEST(Progress, TerminalRedrawsOneLine) {
    std::ostringstream o;
    Progress p(o, true);
    p.show(state(1));
    p.show(state(2));
    const std::string text = o.str();
    EXPECT_EQ(text.find('\n'), std::string::npos);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2);
    p.message("hello");
    EXPECT_NE(o.str().find("hello\n"), std::string::npos);
}

TEST(Progress, PlainLinesAreThrottled) {
    std::ostringstream o;
    Progress p(o, false);
    p.show(state(0));
    p.show(state(1));  // too soon: dropped
    p.show(state(6));
    p.show(state(6.5), true);
    const std::string text = o.str();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
    EXPECT_EQ(text.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace spinlab::run
