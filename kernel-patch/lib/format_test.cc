#include "lib/format.h"

#include <gtest/gtest.h>

#include <string>

namespace {

std::string f(const char* fmt, auto... args) {
    char buf[128];
    format(buf, sizeof buf, fmt, args...);
    return buf;
}

TEST(Format, Integers) {
    EXPECT_EQ(f("%d %d %u", 42, -7, 3000000000u), "42 -7 3000000000");
    EXPECT_EQ(f("%lu %ld", 18446744073709551615ul, -9223372036854775807l - 1),
              "18446744073709551615 -9223372036854775808");
    EXPECT_EQ(f("%x %lx", 0xbeefu, 0x123456789abcul), "beef 123456789abc");
}

TEST(Format, WidthAndFlags) {
    EXPECT_EQ(f("[%5d][%-5d][%05d]", 42, 42, 42), "[   42][42   ][00042]");
    EXPECT_EQ(f("[%016lx]", 0xabcul), "[0000000000000abc]");
    EXPECT_EQ(f("[%-6s][%6s]", "ab", "ab"), "[ab    ][    ab]");
    EXPECT_EQ(f("[%*d]", 4, 7), "[   7]");
    EXPECT_EQ(f("%05d", -42), "-0042");
}

TEST(Format, StringsAndPrecision) {
    EXPECT_EQ(f("%s|%c|%%", "hi", 'x'), "hi|x|%");
    EXPECT_EQ(f("%.*s", 3, "abcdef"), "abc");
    EXPECT_EQ(f("%s", static_cast<const char*>(nullptr)), "(null)");
    EXPECT_EQ(f("%p", reinterpret_cast<void*>(0x1000)), "0x0000000000001000");
}

TEST(Format, TruncatesAndReportsFullLength) {
    char buf[6];
    int n = format(buf, sizeof buf, "%s", "hello world");
    EXPECT_EQ(n, 11);
    EXPECT_STREQ(buf, "hello");
}

}  // namespace
