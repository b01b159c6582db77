// lockstat/log2_table_test.cc: golden output of the log2 wait table.
#include "log2_table.h"

#include <gtest/gtest.h>

#include <string>

namespace spinlab::lockstat {
namespace {

std::string wait_table(const LockClassPerf& c) {
    char buf[4096];
    const size_t n = format_wait_table(c, buf, sizeof buf);
    EXPECT_LT(n, sizeof buf);
    EXPECT_EQ(n, std::string(buf).size());
    return buf;
}

// Shaped like the original WRK experiment's measurement (2^7 135, 2^8 67749, ...), with an
// empty bucket between non-empty ones.
LockClassPerf wrk_like() {
    LockClassPerf c{};
    c.wait_hist[7] = 135;
    c.wait_hist[8] = 67749;
    c.wait_hist[9] = 1200;
    c.wait_hist[10] = 3;
    c.wait_hist[11] = 1;
    c.wait_hist[13] = 7;
    c.wait_overflow = 2;
    c.uncontended = 500;
    c.acquisitions = 69597;
    return c;
}

TEST(Log2Table, GoldenWaitTable) {
    EXPECT_EQ(wait_table(wrk_like()),
              "cycles               count       %  of all acquisitions\n"
              "2^7                    135    0.19\n"
              "2^8                  67749   97.34\n"
              "2^9                   1200    1.72\n"
              "2^10                     3    0.00\n"
              "2^11                     1    0.00\n"
              "2^12                     0    0.00\n"
              "2^13                     7    0.01\n"
              "overflow                 2    0.00\n"
              "uncontended            500    0.72\n");
}

TEST(Log2Table, NoContentionPrintsOnlyOverflowAndUncontended) {
    LockClassPerf c{};
    c.acquisitions = c.uncontended = 4;
    EXPECT_EQ(wait_table(c),
              "cycles               count       %  of all acquisitions\n"
              "overflow                 0    0.00\n"
              "uncontended              4  100.00\n");
}

// A slow-path probe's counters (a Linux guest): every acquisition waited, first-try wins unseen.
TEST(Log2Table, ContendedOnlySaysSoAndHasNoUncontendedRow) {
    LockClassPerf c = wrk_like();
    c.acquisitions -= c.uncontended;
    c.uncontended = 0;
    char buf[4096];
    ASSERT_LT(format_wait_table(c, buf, sizeof buf, AcquisitionsCounted::kContendedOnly), sizeof buf);
    EXPECT_EQ(std::string(buf),
              "cycles               count       %  of contended acquisitions only\n"
              "2^7                    135    0.20\n"
              "2^8                  67749   98.05\n"
              "2^9                   1200    1.74\n"
              "2^10                     3    0.00\n"
              "2^11                     1    0.00\n"
              "2^12                     0    0.00\n"
              "2^13                     7    0.01\n"
              "overflow                 2    0.00\n");
}

TEST(Log2Table, EmptyIsAllZeroNotDivisionByZero) {
    LockClassPerf c{};
    EXPECT_EQ(wait_table(c),
              "cycles               count       %  of all acquisitions\n"
              "overflow                 0    0.00\n"
              "uncontended              0    0.00\n");
}

TEST(Log2Table, GoldenHoldTable) {
    LockClassPerf c{};
    c.hold_hist[0] = 1;
    c.hold_hist[63] = 3;
    c.holds_timed = 4;
    char buf[8192];
    format_hold_table(c, buf, sizeof buf);
    std::string s(buf);
    EXPECT_EQ(s.substr(0, 86),
              "cycles               count       %  of timed holds\n"
              "2^0                      1   25.00\n");
    EXPECT_NE(s.find("2^62                     0    0.00\n"), std::string::npos);
    EXPECT_NE(s.find("2^63                     3   75.00\noverflow                 0    0.00\n"),
              std::string::npos);
    EXPECT_EQ(s.find("uncontended"), std::string::npos);
}

TEST(Log2Table, ShortBufferTruncatesAndReportsTheFullLength) {
    const std::string full = wait_table(wrk_like());
    char small[40];
    const size_t n = format_wait_table(wrk_like(), small, sizeof small);
    EXPECT_EQ(n, full.size());
    EXPECT_EQ(std::string(small), full.substr(0, sizeof small - 1));
    EXPECT_EQ(format_wait_table(wrk_like(), nullptr, 0), full.size());
}

TEST(Log2Table, PercentRoundsHalfUpAndSurvivesHugeCounts) {
    char b[32];
    format_percent(1, 3, b, sizeof b);
    EXPECT_STREQ(b, "33.33");
    format_percent(2, 3, b, sizeof b);
    EXPECT_STREQ(b, "66.67");
    format_percent(1, 20000, b, sizeof b);  // 0.005 % rounds up
    EXPECT_STREQ(b, "0.01");
    format_percent(~0ull, ~0ull, b, sizeof b);
    EXPECT_STREQ(b, "100.00");
    format_percent(~0ull / 2, ~0ull, b, sizeof b);
    EXPECT_STREQ(b, "50.00");
    // A count far above its total (a guest-written reading): no division by the halved total.
    format_percent(~0ull, 1, b, sizeof b);
    EXPECT_STREQ(b, "0.00");
}

}  // namespace
}  // namespace spinlab::lockstat
