// The ELF checks against the real guest programs (built by `make kernel`) and damaged copies.
#include "lib/elf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "spinlab/syscall.h"

namespace {

std::vector<uint8_t> program(const char* name) {
    std::string path = std::string(SPINLAB_GUEST_BIN_DIR) + "/" + name;
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path << " missing: run `make kernel` first";
    return {std::istreambuf_iterator<char>(f), {}};
}

elf::Error parse(const std::vector<uint8_t>& b, elf::Image* img) {
    return elf::parse(b.data(), b.size(), spinlab::kUserBase, spinlab::kUserMapBase, img);
}

TEST(Elf, GuestProgramsLoad) {
    for (const char* name : {"hello", "sh", "usertest", "fault"}) {
        auto b = program(name);
        elf::Image img;
        ASSERT_EQ(parse(b, &img), elf::Error::kOk) << name;
        EXPECT_EQ(img.entry, spinlab::kUserBase) << name;  // _start first (user.ld)
        ASSERT_EQ(img.nsegments, 3) << name;              // text, rodata, data
        EXPECT_TRUE(img.segments[0].executable && !img.segments[0].writable);
        EXPECT_TRUE(!img.segments[1].executable && !img.segments[1].writable);
        EXPECT_TRUE(!img.segments[2].executable && img.segments[2].writable);
        for (int i = 0; i < img.nsegments; i++) EXPECT_EQ(img.segments[i].vaddr % 4096, 0u);
    }
}

TEST(Elf, RejectsEachKindOfDamage) {
    auto good = program("hello");
    ASSERT_GT(good.size(), 64u);
    elf::Image img;
    auto damaged = [&](auto edit) {
        auto b = good;
        edit(b);
        return parse(b, &img);
    };
    EXPECT_EQ(elf::parse(good.data(), 10, 0, ~0ull, &img), elf::Error::kTooSmall);
    EXPECT_EQ(damaged([](auto& b) { b[1] = 'X'; }), elf::Error::kNotElf);
    EXPECT_EQ(damaged([](auto& b) { b[4] = 1; }), elf::Error::kNot64Bit);
    EXPECT_EQ(damaged([](auto& b) { b[5] = 2; }), elf::Error::kNotLittleEndian);
    EXPECT_EQ(damaged([](auto& b) { b[18] = 3; }), elf::Error::kNotX86_64);
    EXPECT_EQ(damaged([](auto& b) { b[16] = 3; }), elf::Error::kNotExecutable);
    EXPECT_EQ(damaged([](auto& b) { b[56] = 0xff; b[57] = 0xff; }), elf::Error::kBadProgramHeaders);
    uint64_t phoff;
    std::memcpy(&phoff, &good[32], 8);
    // First program header is the text segment (PT_LOAD): corrupt its fields.
    EXPECT_EQ(damaged([&](auto& b) { uint64_t v = 1ull << 40; std::memcpy(&b[phoff + 8], &v, 8); }),
              elf::Error::kSegmentOutsideFile);
    EXPECT_EQ(damaged([&](auto& b) { uint64_t v = 0x1000; std::memcpy(&b[phoff + 16], &v, 8); }),
              elf::Error::kSegmentOutsideRange);  // into the kernel's half
    EXPECT_EQ(damaged([&](auto& b) { uint64_t v = ~0ull; std::memcpy(&b[phoff + 40], &v, 8); }),
              elf::Error::kSegmentOutsideRange);  // wraps around
    EXPECT_EQ(damaged([&](auto& b) { uint64_t v = 0; std::memcpy(&b[phoff + 40], &v, 8); }),
              elf::Error::kFileLargerThanMemory);
    EXPECT_EQ(damaged([](auto& b) { uint64_t v = 0x8000100000; std::memcpy(&b[24], &v, 8); }),
              elf::Error::kEntryOutsideSegments);
}

}  // namespace
