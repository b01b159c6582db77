#include "lib/argpack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/user_range.h"

namespace {

constexpr uint64_t kTop = 0x7ffffffff000;

TEST(ArgPack, StringsAndPointerArrayLaidOutBelowTheTop) {
    const char* argv[] = {"usertest", "args", "a", "bb"};
    std::vector<uint8_t> buf(4096);
    ArgPack p;
    ASSERT_TRUE(argpack(argv, 4, kTop, buf.data(), buf.size(), &p));
    EXPECT_EQ(p.rsp % 16, 0u);
    EXPECT_EQ(p.argv, p.rsp);
    EXPECT_EQ(p.used, kTop - p.rsp);
    uint64_t base = kTop - buf.size();
    auto at = [&](uint64_t addr) { return buf.data() + (addr - base); };
    for (int i = 0; i <= 4; i++) {
        uint64_t ptr;
        std::memcpy(&ptr, at(p.argv + 8 * i), 8);
        if (i == 4) {
            EXPECT_EQ(ptr, 0u);  // NULL-terminated
        } else {
            ASSERT_GT(ptr, p.argv);
            ASSERT_LT(ptr, kTop);
            EXPECT_STREQ(reinterpret_cast<const char*>(at(ptr)), argv[i]);
        }
    }
}

TEST(ArgPack, NoArguments) {
    std::vector<uint8_t> buf(256);
    ArgPack p;
    ASSERT_TRUE(argpack(nullptr, 0, kTop, buf.data(), buf.size(), &p));
    uint64_t ptr = 1;
    std::memcpy(&ptr, buf.data() + (p.argv - (kTop - buf.size())), 8);
    EXPECT_EQ(ptr, 0u);
}

TEST(ArgPack, RefusesWhatDoesNotFit) {
    std::string big(300, 'x');
    const char* argv[] = {big.c_str()};
    std::vector<uint8_t> buf(256);
    ArgPack p;
    EXPECT_FALSE(argpack(argv, 1, kTop, buf.data(), buf.size(), &p));
    EXPECT_FALSE(argpack(argv, -1, kTop, buf.data(), buf.size(), &p));
}

TEST(UserRange, AcceptsOnlyTheUserHalfWithoutOverflow) {
    using namespace spinlab;
    EXPECT_TRUE(user_range_ok(kUserBase, 4096));
    EXPECT_TRUE(user_range_ok(kUserLimit - 8, 8));
    EXPECT_TRUE(user_range_ok(kUserBase, 0));
    EXPECT_FALSE(user_range_ok(kUserLimit - 8, 9));       // runs past the top
    EXPECT_FALSE(user_range_ok(kUserBase - 1, 1));        // kernel half
    EXPECT_FALSE(user_range_ok(0x100000, 10));            // the kernel image
    EXPECT_FALSE(user_range_ok(0xffff800000000000, 1));   // non-canonical/kernel
    EXPECT_FALSE(user_range_ok(kUserBase, ~0ull));        // huge length
    EXPECT_FALSE(user_range_ok(kUserBase + 16, ~0ull - 8));  // would wrap around
}

}  // namespace
