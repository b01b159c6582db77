// channel/crc32c_test.cc: the two CRC-32C implementations (SSE4.2 and table) against the
// standard's vectors and against each other on random data, lengths and alignments.
#include "channel/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace spinlab {
namespace {

using Fn = uint32_t (*)(uint32_t, const void*, size_t);

struct Vector {
    std::vector<uint8_t> data;
    uint32_t crc;
};

// RFC 3720 (iSCSI), appendix B.4, and the check value of "123456789".
std::vector<Vector> known_vectors() {
    std::vector<Vector> v;
    v.push_back({std::vector<uint8_t>(32, 0x00), 0x8A9136AAu});
    v.push_back({std::vector<uint8_t>(32, 0xFF), 0x62A8AB43u});
    std::vector<uint8_t> up(32), down(32);
    for (int i = 0; i < 32; i++) up[i] = uint8_t(i), down[i] = uint8_t(31 - i);
    v.push_back({up, 0x46DD794Eu});
    v.push_back({down, 0x113FDB5Cu});
    const char* digits = "123456789";
    v.push_back({std::vector<uint8_t>(digits, digits + 9), 0xE3069283u});
    v.push_back({{}, 0u});
    return v;
}

void expect_known_vectors(Fn f, const char* name) {
    for (const Vector& v : known_vectors()) {
        EXPECT_EQ(f(0, v.data.data(), v.data.size()), v.crc) << name << ", " << v.data.size() << " bytes";
        // The same bytes at every alignment of an 8-byte word.
        for (size_t shift = 1; shift < 8; shift++) {
            std::vector<uint8_t> moved(v.data.size() + shift);
            std::memcpy(moved.data() + shift, v.data.data(), v.data.size());
            EXPECT_EQ(f(0, moved.data() + shift, v.data.size()), v.crc) << name << ", shifted by " << shift;
        }
    }
}

TEST(Crc32c, TableGivesTheStandardVectors) { expect_known_vectors(crc32c_update_table, "table"); }

TEST(Crc32c, HardwareGivesTheStandardVectors) {
    if (!crc32c_hw_available()) GTEST_SKIP() << "this CPU has no SSE4.2 (CPUID.1:ECX bit 20)";
    expect_known_vectors(crc32c_update_hw, "sse4.2");
}

TEST(Crc32c, UpdateRunsTheHardwareWhereTheCpuHasIt) {
    EXPECT_STREQ(crc32c_implementation(), crc32c_hw_available() ? "sse4.2" : "table");
    expect_known_vectors(crc32c_update, "crc32c_update");
}

// Random bytes at random offsets and lengths (0 to 70,000: past a trace buffer of 64 KiB), and
// continued in random pieces: the hardware and the table agree on every one.
TEST(Crc32c, HardwareAndTableAgreeOnRandomInputs) {
    if (!crc32c_hw_available()) GTEST_SKIP() << "this CPU has no SSE4.2 (CPUID.1:ECX bit 20)";
    std::mt19937_64 rng(20261128);
    std::vector<uint8_t> buf(70'000 + 16);
    for (auto& b : buf) b = uint8_t(rng());
    for (int i = 0; i < 3000; i++) {
        const size_t off = rng() % 16;
        const size_t len = i < 200 ? size_t(i) : i % 10 == 0 ? rng() % 70'000 : rng() % 600;
        const uint32_t seed = i % 3 == 0 ? 0 : uint32_t(rng());
        const uint32_t want = crc32c_update_table(seed, buf.data() + off, len);
        ASSERT_EQ(crc32c_update_hw(seed, buf.data() + off, len), want)
            << "offset " << off << ", length " << len << ", seed " << seed;
        // In two pieces, split anywhere.
        const size_t cut = len ? rng() % len : 0;
        ASSERT_EQ(crc32c_update_hw(crc32c_update_hw(seed, buf.data() + off, cut), buf.data() + off + cut,
                                   len - cut),
                  want)
            << "offset " << off << ", length " << len << ", cut at " << cut;
    }
}

}  // namespace
}  // namespace spinlab
