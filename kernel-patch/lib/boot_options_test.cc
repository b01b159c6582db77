#include "lib/boot_options.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using bootopt::Kind;
const bootopt::Spec kSpecs[] = {
    {"hz", Kind::kUint, nullptr, 10, 1000, ""},
    {"lock", Kind::kChoice, "tas|ticket|mcs|pv", 0, 0, ""},
    {"selftest", Kind::kString, nullptr, 0, 0, ""},
    {"init", Kind::kRest, nullptr, 0, 0, ""},
};
constexpr int kN = 4;

struct Parsed {
    bootopt::Error err;
    bootopt::Value v[kN];
};

Parsed parse(const char* line) {
    Parsed p;
    p.err = bootopt::parse(line, kSpecs, kN, p.v);
    return p;
}

TEST(BootOptions, EmptyLineSetsNothing) {
    Parsed p = parse("   ");
    ASSERT_TRUE(p.err.ok);
    for (auto& v : p.v) EXPECT_FALSE(v.set);
}

TEST(BootOptions, ParsesEachKind) {
    Parsed p = parse("hz=250 lock=mcs selftest=smp,mem init=/bin/lockbench -t 4 --locks 8 ");
    ASSERT_TRUE(p.err.ok) << p.err.message;
    EXPECT_EQ(p.v[0].num, 250u);
    EXPECT_EQ(p.v[1].num, 2u);  // index of mcs
    EXPECT_STREQ(p.v[2].str, "smp,mem");
    EXPECT_STREQ(p.v[3].str, "/bin/lockbench -t 4 --locks 8");
}

TEST(BootOptions, LaterWordOverrides) {
    Parsed p = parse("hz=100 hz=200");
    ASSERT_TRUE(p.err.ok);
    EXPECT_EQ(p.v[0].num, 200u);
}

TEST(BootOptions, UnknownOptionNamed) {
    Parsed p = parse("hz=100 lokc=mcs");
    EXPECT_FALSE(p.err.ok);
    EXPECT_EQ(std::string(p.err.message), "unknown boot option 'lokc=mcs'");
}

TEST(BootOptions, MissingEqualsNamed) {
    Parsed p = parse("quiet");
    EXPECT_FALSE(p.err.ok);
    EXPECT_NE(std::string(p.err.message).find("'quiet'"), std::string::npos);
}

TEST(BootOptions, RangeCheckedAtBothEnds) {
    EXPECT_TRUE(parse("hz=10").err.ok);
    EXPECT_TRUE(parse("hz=1000").err.ok);
    Parsed lo = parse("hz=9");
    EXPECT_FALSE(lo.err.ok);
    EXPECT_EQ(std::string(lo.err.message), "boot option 'hz=9' out of range [10, 1000]");
    EXPECT_FALSE(parse("hz=1001").err.ok);
}

TEST(BootOptions, NumbersMustBeNumbers) {
    EXPECT_FALSE(parse("hz=12a").err.ok);
    EXPECT_FALSE(parse("hz=-5").err.ok);
    EXPECT_FALSE(parse("hz=99999999999999999999999").err.ok);
}

TEST(BootOptions, ChoiceListedOnError) {
    Parsed p = parse("lock=spin");
    EXPECT_FALSE(p.err.ok);
    EXPECT_EQ(std::string(p.err.message), "boot option 'lock=spin': choose one of tas|ticket|mcs|pv");
    EXPECT_FALSE(parse("lock=mc").err.ok);    // a prefix is not a match
    EXPECT_FALSE(parse("lock=mcss").err.ok);
}

TEST(BootOptions, EmptyValueRejected) {
    EXPECT_FALSE(parse("selftest=").err.ok);
}

}  // namespace
