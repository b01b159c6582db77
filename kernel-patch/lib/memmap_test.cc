#include "lib/memmap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

struct Entry {
    uint64_t base, len;
    uint32_t type;
};

std::vector<uint8_t> mb(std::initializer_list<Entry> es) {
    std::vector<uint8_t> out;
    for (const Entry& e : es) {
        uint8_t b[24];
        uint32_t size = 20;
        std::memcpy(b, &size, 4);
        std::memcpy(b + 4, &e.base, 8);
        std::memcpy(b + 12, &e.len, 8);
        std::memcpy(b + 20, &e.type, 4);
        out.insert(out.end(), b, b + 24);
    }
    return out;
}

TEST(Memmap, KeepsUsableRangesSortedAndPageAligned) {
    auto bytes = mb({{0x100000, 0x7ee0000, 1}, {0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}});
    memmap::Map m = memmap::from_multiboot(bytes.data(), uint32_t(bytes.size()));
    ASSERT_EQ(m.n, 2);
    EXPECT_EQ(m.r[0].base, 0u);
    EXPECT_EQ(m.r[0].end, 0x9f000u);  // rounded down to a page
    EXPECT_EQ(m.r[1].base, 0x100000u);
    EXPECT_EQ(m.r[1].end, 0x7fe0000u);
}

TEST(Memmap, MergesAdjacentAndOverlapping) {
    auto bytes = mb({{0x100000, 0x100000, 1}, {0x200000, 0x100000, 1}, {0x250000, 0x200000, 1}});
    memmap::Map m = memmap::from_multiboot(bytes.data(), uint32_t(bytes.size()));
    ASSERT_EQ(m.n, 1);
    EXPECT_EQ(m.r[0].base, 0x100000u);
    EXPECT_EQ(m.r[0].end, 0x450000u);
}

TEST(Memmap, ReservedEntryWinsOverOverlappingUsable) {
    auto bytes = mb({{0x100000, 0x400000, 1}, {0x200000, 0x1000, 2}});
    memmap::Map m = memmap::from_multiboot(bytes.data(), uint32_t(bytes.size()));
    ASSERT_EQ(m.n, 2);
    EXPECT_EQ(m.r[0].end, 0x200000u);
    EXPECT_EQ(m.r[1].base, 0x201000u);
    EXPECT_EQ(m.total(), 0x400000u - 0x1000u);
}

TEST(Memmap, SubtractSplitsTrimsAndRemoves) {
    auto bytes = mb({{0x100000, 0x400000, 1}});
    memmap::Map m = memmap::from_multiboot(bytes.data(), uint32_t(bytes.size()));
    memmap::subtract(m, {0x180000, 0x180800});  // unaligned: widened to whole pages
    ASSERT_EQ(m.n, 2);
    EXPECT_EQ(m.r[0].end, 0x180000u);
    EXPECT_EQ(m.r[1].base, 0x181000u);
    memmap::subtract(m, {0, 0x181000});         // removes the first, trims nothing else
    ASSERT_EQ(m.n, 1);
    memmap::subtract(m, {0x400000, ~0ull});     // trims the tail
    EXPECT_EQ(m.r[0].end, 0x400000u);
}

TEST(Memmap, StopsOnMalformedEntry) {
    auto bytes = mb({{0x100000, 0x100000, 1}});
    uint32_t bad = 3;
    std::memcpy(bytes.data(), &bad, 4);  // size too small to hold an entry
    memmap::Map m = memmap::from_multiboot(bytes.data(), uint32_t(bytes.size()));
    EXPECT_EQ(m.n, 0);
}

}  // namespace
