// Tests of the shared region's layout, header validation and clock seqcount.
#include "channel/region_header.h"

#include <gtest/gtest.h>

#include <chrono>
#include <atomic>
#include <thread>
#include <vector>

#include <cstring>
#include <vector>

#include "channel/clock_area.h"

namespace spinlab {
namespace {

struct Region {
    explicit Region(uint64_t size) : bytes(size / 8 + 1) {}
    void* base() { return bytes.data(); }
    RegionHeader* header() { return static_cast<RegionHeader*>(base()); }
    std::vector<uint64_t> bytes;  // 8-byte aligned storage
};

constexpr uint64_t kSize = 1 << 20;

TEST(RegionHeader, LayoutThenParseAgrees) {
    Region r(kSize);
    ASSERT_EQ(region_layout(r.base(), kSize, 8, 2'600'000'000, 12345), RegionError::kNone);
    RegionLayout l;
    ASSERT_EQ(region_parse(r.base(), kSize, &l), RegionError::kNone);
    EXPECT_EQ(l.cpu_count, 8u);
    EXPECT_EQ(l.tsc_hz, 2'600'000'000u);
    EXPECT_EQ(l.boot_tsc, 12345u);
    EXPECT_EQ(l.generation % 2, 0u);
    EXPECT_NE(l.generation, 0u);
    const auto& perf = l.section(RegionSection::kPerfData);
    EXPECT_EQ(perf.offset % kRegionPageSize, 0u);
    EXPECT_GE(perf.stride, sizeof(CpuPerfData));
    EXPECT_EQ(perf.count, 8u);
    // The trace section gets the rest of the region.
    const auto& trace = l.section(RegionSection::kTrace);
    EXPECT_EQ(trace.offset, perf.offset + perf.size);
    EXPECT_EQ(trace.offset + trace.size, kSize);
    // CPU blocks are where the section table says, and writable through the mapping.
    auto* cpu3 = const_cast<CpuPerfData*>(region_cpu(r.base(), l, 3));
    EXPECT_EQ(reinterpret_cast<uint8_t*>(cpu3) - static_cast<uint8_t*>(r.base()),
              int64_t(perf.offset + 3 * perf.stride));
    EXPECT_EQ(region_end_read(r.base(), l), RegionError::kNone);
    // The host-written vCPU state area: in page 0, whole, zeroed (every vCPU "running").
    const auto& vs = l.section(RegionSection::kVcpuState);
    EXPECT_EQ(vs.offset, kRegionVcpuStateOffset);
    EXPECT_EQ(vs.size, sizeof(VcpuStateArea));
    const auto* area = reinterpret_cast<const VcpuStateArea*>(static_cast<uint8_t*>(r.base()) + vs.offset);
    EXPECT_EQ(area->publishers, 0u);
    for (const VcpuStateEntry& e : area->cpu) EXPECT_EQ(e.off, 0u);
}

TEST(RegionHeader, RelayoutBumpsGenerationAndZeroesCounters) {
    Region r(kSize);
    ASSERT_EQ(region_layout(r.base(), kSize, 2, 0, 0), RegionError::kNone);
    RegionLayout first;
    ASSERT_EQ(region_parse(r.base(), kSize, &first), RegionError::kNone);
    const_cast<CpuPerfData*>(region_cpu(r.base(), first, 1))->classes[0].acquisitions = 99;
    // A guest reboot lays the region out again over the old contents.
    ASSERT_EQ(region_layout(r.base(), kSize, 4, 0, 0), RegionError::kNone);
    EXPECT_EQ(region_end_read(r.base(), first), RegionError::kChanged);
    RegionLayout second;
    ASSERT_EQ(region_parse(r.base(), kSize, &second), RegionError::kNone);
    EXPECT_GT(second.generation, first.generation);
    EXPECT_EQ(region_cpu(r.base(), second, 1)->classes[0].acquisitions, 0u);
}

TEST(RegionHeader, RelayoutClearsTheTraceAreasHeaderPageOnly) {
    Region r(kSize);
    ASSERT_EQ(region_layout(r.base(), kSize, 2, 0, 0), RegionError::kNone);
    RegionLayout first;
    ASSERT_EQ(region_parse(r.base(), kSize, &first), RegionError::kNone);
    const RegionSectionEntry& t = first.section(RegionSection::kTrace);
    ASSERT_GT(t.size, 2u * kRegionPageSize);
    auto* trace = static_cast<uint8_t*>(r.base()) + t.offset;
    // An old session's area header (its magic) and a buffer's bytes on the next page.
    std::memset(trace, 0xab, kRegionPageSize + 16);
    ASSERT_EQ(region_layout(r.base(), kSize, 2, 0, 0), RegionError::kNone);
    for (uint32_t i = 0; i < kRegionPageSize; i++) ASSERT_EQ(trace[i], 0) << "trace area byte " << i;
    // Left as it was: the guest touches no more of it at boot (each page first touched costs
    // ~3 ms under nested KVM); a session lays out what it reads.
    EXPECT_EQ(trace[kRegionPageSize], 0xab);
}

TEST(RegionHeader, LayoutRefusesImpossibleRequests) {
    Region r(kSize);
    EXPECT_EQ(region_layout(r.base(), kSize, 0, 0, 0), RegionError::kBadCpuCount);
    EXPECT_EQ(region_layout(r.base(), kSize, kRegionMaxCpus + 1, 0, 0), RegionError::kBadCpuCount);
    EXPECT_EQ(region_layout(r.base(), region_size_needed(4, 0) - 1, 4, 0, 0),
              RegionError::kTooSmall);
    EXPECT_EQ(region_layout(r.base(), region_size_needed(4, 0), 4, 0, 0), RegionError::kNone);
}

// Each case corrupts one thing in a valid header and expects its own error.
struct Corruption {
    const char* name;
    void (*apply)(RegionHeader&);
    RegionError expected;
};

class RegionHeaderCorrupt : public ::testing::TestWithParam<Corruption> {};

TEST_P(RegionHeaderCorrupt, IsRejectedWithItsReason) {
    Region r(kSize);
    ASSERT_EQ(region_layout(r.base(), kSize, 4, 0, 0), RegionError::kNone);
    GetParam().apply(*r.header());
    RegionLayout l;
    EXPECT_EQ(region_parse(r.base(), kSize, &l), GetParam().expected) << GetParam().name;
}

constexpr uint32_t kPerf = uint32_t(RegionSection::kPerfData);
constexpr uint32_t kClockSec = uint32_t(RegionSection::kClock);
constexpr uint32_t kTraceSec = uint32_t(RegionSection::kTrace);
constexpr uint32_t kVcpuSec = uint32_t(RegionSection::kVcpuState);

INSTANTIATE_TEST_SUITE_P(
    EveryField, RegionHeaderCorrupt,
    ::testing::Values(
        Corruption{"magic", [](RegionHeader& h) { h.magic ^= 1; }, RegionError::kBadMagic},
        Corruption{"version", [](RegionHeader& h) { h.abi_version = 99; },
                   RegionError::kBadVersion},
        Corruption{"generation odd", [](RegionHeader& h) { h.generation |= 1; },
                   RegionError::kBusy},
        Corruption{"generation zero", [](RegionHeader& h) { h.generation = 0; },
                   RegionError::kBusy},
        // Caught mid-layout: the magic copied, the versions not yet (generation odd): busy, not
        // another ABI.
        Corruption{"mid layout",
                   [](RegionHeader& h) {
                       h.generation |= 1;
                       h.abi_version = 0;
                       h.perfdata_version = 0;
                   },
                   RegionError::kBusy},
        Corruption{"header size", [](RegionHeader& h) { h.header_size = 8; },
                   RegionError::kBadHeaderSize},
        Corruption{"region size", [](RegionHeader& h) { h.region_size = kSize * 2; },
                   RegionError::kBadRegionSize},
        Corruption{"cpu count zero", [](RegionHeader& h) { h.cpu_count = 0; },
                   RegionError::kBadCpuCount},
        Corruption{"cpu count huge", [](RegionHeader& h) { h.cpu_count = 1000; },
                   RegionError::kBadCpuCount},
        Corruption{"perfdata size", [](RegionHeader& h) { h.perfdata_size = 64; },
                   RegionError::kBadPerfData},
        Corruption{"section past end",
                   [](RegionHeader& h) { h.sections[kTraceSec].size += 64; },
                   RegionError::kBadSection},
        Corruption{"section offset wraps",
                   [](RegionHeader& h) { h.sections[kTraceSec].offset = ~0ull - 63; },
                   RegionError::kBadSection},
        Corruption{"misaligned", [](RegionHeader& h) { h.sections[kClockSec].offset += 8; },
                   RegionError::kBadSection},
        Corruption{"inside header", [](RegionHeader& h) { h.sections[kClockSec].offset = 64; },
                   RegionError::kBadSection},
        Corruption{"stride too small", [](RegionHeader& h) { h.sections[kPerf].stride = 64; },
                   RegionError::kBadSection},
        Corruption{"too few cpu blocks", [](RegionHeader& h) { h.sections[kPerf].count = 3; },
                   RegionError::kBadSection},
        Corruption{"overlap",
                   [](RegionHeader& h) {
                       h.sections[kClockSec].offset = h.sections[kPerf].offset;
                   },
                   RegionError::kBadSection},
        // The host writes the vCPU state area: it must be whole, inside the region and apart
        // from every section the guest writes, or the host's stores would land in them.
        Corruption{"vcpu state too small",
                   [](RegionHeader& h) { h.sections[kVcpuSec].size = 64; },
                   RegionError::kBadSection},
        Corruption{"vcpu state over the clock",
                   [](RegionHeader& h) { h.sections[kVcpuSec].offset = h.sections[kClockSec].offset; },
                   RegionError::kBadSection},
        Corruption{"vcpu state past end",
                   [](RegionHeader& h) { h.sections[kVcpuSec].offset = kSize - 64; },
                   RegionError::kBadSection},
        Corruption{"vcpu state inside header",
                   [](RegionHeader& h) { h.sections[kVcpuSec].offset = 0; },
                   RegionError::kBadSection}),
    [](const auto& info) {
        std::string s = info.param.name;
        for (char& ch : s)
            if (ch == ' ') ch = '_';
        return s;
    });

// The guest's read of the host-written words (vcpu_state_off_bits): whatever the host left in
// the area, a cpu out of range reads 0 and only the kVcpuOff* bits count.
TEST(VcpuState, TheGuestReadsOnlyItsCpusAndOnlyKnownBits) {
    VcpuStateArea area{};
    for (VcpuStateEntry& e : area.cpu) e.off = kVcpuOffPreempted;  // a host writing every word
    area.cpu[1].off = kVcpuOffFrozen | 0xF0u;
    area.cpu[2].off = 0xFFFFFFF8u;  // no known bit
    EXPECT_EQ(vcpu_state_off_bits(&area, 0, 4), kVcpuOffPreempted);
    EXPECT_EQ(vcpu_state_off_bits(&area, 1, 4), kVcpuOffFrozen);
    EXPECT_EQ(vcpu_state_off_bits(&area, 2, 4), 0u);
    for (uint32_t cpu : {4u, 5u, 63u, 64u, 1000u, 0xFFFFFFFFu})
        EXPECT_EQ(vcpu_state_off_bits(&area, cpu, 4), 0u) << cpu;
    EXPECT_EQ(vcpu_state_off_bits(&area, 64, 1000), 0u);  // never past the area
    EXPECT_EQ(vcpu_state_off_bits(nullptr, 0, 4), 0u);
}

TEST(RegionHeader, ParseRefusesAMappingSmallerThanTheHeaderSays) {
    Region r(kSize);
    ASSERT_EQ(region_layout(r.base(), kSize, 4, 0, 0), RegionError::kNone);
    RegionLayout l;
    EXPECT_EQ(region_parse(r.base(), kSize / 2, &l), RegionError::kBadRegionSize);
    EXPECT_EQ(region_parse(r.base(), 16, &l), RegionError::kTooSmall);
    EXPECT_EQ(region_parse(nullptr, kSize, &l), RegionError::kTooSmall);
}

TEST(RegionHeader, AZeroFileIsNotARegion) {
    Region r(kSize);
    RegionLayout l;
    EXPECT_EQ(region_parse(r.base(), kSize, &l), RegionError::kBadMagic);
}

TEST(ClockArea, ReadSeesEachPublication) {
    ClockArea a{};
    ClockReading r;
    ASSERT_TRUE(clock_try_read(&a, &r));
    EXPECT_EQ(r.count, 0u);
    clock_publish(&a, 1000, 0, 1000);
    ASSERT_TRUE(clock_try_read(&a, &r));
    EXPECT_EQ(r.guest_tsc, 1000u);
    EXPECT_EQ(r.count, 1u);
    uint64_t seq1 = r.seq;
    clock_publish(&a, 2000, 1, 1000);
    ASSERT_TRUE(clock_try_read(&a, &r));
    EXPECT_EQ(r.guest_tsc, 2000u);
    EXPECT_EQ(r.cpu, 1u);
    EXPECT_EQ(r.seq, seq1 + 2);
}

TEST(ClockArea, ReadFailsWhileAPublicationIsInProgress) {
    ClockArea a{};
    clock_publish(&a, 5, 0, 1);
    a.seq += 1;  // what a reader sees between the writer's two seq stores
    ClockReading r;
    EXPECT_FALSE(clock_try_read(&a, &r));
}

TEST(ClockArea, AnyCpuPublishesButNotTwicePerGapNorWhileAnotherWrites) {
    ClockArea a{};
    EXPECT_TRUE(clock_publish(&a, 1000, 2, 10, 500));   // the first publication has no gap to keep
    EXPECT_FALSE(clock_publish(&a, 1400, 0, 10, 500));  // 400 cycles after it: skipped
    EXPECT_FALSE(clock_publish(&a, 900, 1, 10, 500));   // behind it (another CPU's TSC): skipped
    EXPECT_TRUE(clock_publish(&a, 1500, 3, 10, 500));
    ClockReading r;
    ASSERT_TRUE(clock_try_read(&a, &r));
    EXPECT_EQ(r.guest_tsc, 1500u);
    EXPECT_EQ(r.cpu, 3u);
    EXPECT_EQ(r.count, 2u);
    a.seq += 1;  // another CPU holds it
    EXPECT_FALSE(clock_publish(&a, 9000, 0, 10, 0));
    a.seq += 1;
    ASSERT_TRUE(clock_try_read(&a, &r));
    EXPECT_EQ(r.guest_tsc, 1500u) << "a skipped writer changed nothing";
}

TEST(ClockArea, ConcurrentPublishersNeverTearAPublication) {
    // Four writers race with a reader: every consistent read has a guest_tsc that some writer
    // published with the cpu that published it (tsc = cpu * 2^40 + i), and the count is exact.
    // The writers go on past 20,000 publications each until the reader has made 100 consistent
    // reads (or 5 s have passed): on a loaded 2-core host the reader was once not scheduled at
    // all before the writers were done (reads 0).
    ClockArea a{};
    std::atomic<uint64_t> published{0}, reads{0};
    std::atomic<bool> done{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::vector<std::thread> writers;
    for (uint32_t cpu = 0; cpu < 4; ++cpu)
        writers.emplace_back([&, cpu] {
            for (uint64_t i = 1; i <= 20000 || (reads < 100 && std::chrono::steady_clock::now() < deadline); ++i)
                published += clock_publish(&a, (uint64_t(cpu) << 40) + i, cpu, 10, 0);
        });
    uint64_t torn = 0;
    std::thread reader([&] {
        while (!done) {
            ClockReading r;
            if (!clock_try_read(&a, &r)) continue;
            ++reads;
            torn += (r.guest_tsc >> 40) != r.cpu;
        }
    });
    for (auto& w : writers) w.join();
    done = true;
    reader.join();
    EXPECT_EQ(torn, 0u);
    EXPECT_GT(reads, 0u);
    EXPECT_EQ(a.count, published.load());
    EXPECT_EQ(a.seq, 2 * published.load());
}

TEST(RegionHeader, EveryErrorHasAName) {
    for (uint32_t e = 0; e <= uint32_t(RegionError::kChanged); ++e)
        EXPECT_STRNE(region_error_name(RegionError(e)), "unknown region error") << e;
}

}  // namespace
}  // namespace spinlab
