// collector/hostile_region_test.cc: the host's checks of a guest-written shared region, one bad
// field at a time: each region below is what a hostile (or broken) guest could write, and each
// test asserts the named error (never a crash, never a read outside the region) and that what
// was taken before the bad field stays in the output. docs/architecture.md, "What the host
// trusts", lists the checks; the concurrent fuzzer (hostile_region_fuzzer.cc) covers the rest.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "hostlib/error.h"
#include "locktrace/drain.h"
#include "locktrace/trace_file.h"
#include "region_reader.h"
#include "snapshot.h"
#include "testing/mem_region.h"
#include "trace/trace_recorder.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;
using testing::MemRegion;

// --- drain (locktrace/drain.h): the per-CPU counters ------------------------------------------

struct Drain {
    MemRegion r;
    TraceAreaHeader h{};
    std::vector<uint8_t> dst;
    explicit Drain(TraceLoggerMode mode = TraceLoggerMode::kRealTime, uint32_t buffers = 4)
        : r(2, buffers, mode), dst(MemRegion::kBufferSize) {
        EXPECT_EQ(lt::area_parse(r.area(), r.area_size(), &h), nullptr);
    }
    lt::TakeResult take(uint32_t cpu, lt::DrainCursor* c, lt::DrainError* e) {
        uint32_t len = 0;
        return lt::take_buffer(r.area(), h, cpu, c, dst.data(), &len, e);
    }
};

TEST(HostileDrain, ProducedWentBackwards) {
    Drain d;
    ASSERT_EQ(d.r.publish(1, 3), 3u);
    lt::DrainCursor c;
    ASSERT_EQ(lt::cursor_init(d.r.area(), d.h, 1, &c), lt::DrainError::kNone);
    lt::DrainError e = lt::DrainError::kNone;
    ASSERT_EQ(d.take(1, &c, &e), lt::TakeResult::kTaken);
    d.r.control(1)->produced = 0;  // the guest rewinds its counter
    EXPECT_EQ(d.take(1, &c, &e), lt::TakeResult::kCorrupt);
    EXPECT_EQ(e, lt::DrainError::kProducedBackwards);
    EXPECT_STREQ(lt::drain_error_name(e), "produced went backwards");
}

TEST(HostileDrain, ProducedFarAheadOfConsumed) {
    Drain d;
    lt::DrainCursor c;
    ASSERT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kNone);
    d.r.control(0)->produced = 5;  // 4 buffers: the CPU can never be 5 ahead
    lt::DrainError e = lt::DrainError::kNone;
    EXPECT_EQ(d.take(0, &c, &e), lt::TakeResult::kCorrupt);
    EXPECT_EQ(e, lt::DrainError::kProducedAhead);
    d.r.control(0)->produced = ~0ull;  // the old code's (consumed % n) on a wrapped difference
    EXPECT_EQ(d.take(0, &c, &e), lt::TakeResult::kCorrupt);
}

TEST(HostileDrain, CountersAtAttach) {
    Drain d;
    lt::DrainCursor c;
    d.r.control(0)->consumed = 3;  // above produced (0)
    EXPECT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kConsumedAhead);
    d.r.control(0)->consumed = 0;
    d.r.control(0)->overwritten = 1;
    EXPECT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kOverwrittenAhead);
    d.r.control(0)->overwritten = 0;
    d.r.control(0)->produced = 9;
    EXPECT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kProducedAhead);
    EXPECT_EQ(lt::cursor_init(d.r.area(), d.h, 2, &c), lt::DrainError::kBadCpu);
}

TEST(HostileDrain, CircularOverwrittenChecks) {
    Drain d(TraceLoggerMode::kCircular);
    ASSERT_EQ(d.r.publish(0, 6), 6u);  // 4 slots: 2 overwritten
    lt::DrainCursor c;
    ASSERT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kNone);
    uint32_t emitted = 0;
    lt::DrainError e = lt::DrainError::kNone;
    auto count = [](void* arg, const uint8_t*, uint32_t) { ++*static_cast<uint32_t*>(arg); };
    lt::read_in_place(d.r.area(), d.h, 0, &c, d.dst.data(), count, &emitted, &e);
    EXPECT_EQ(e, lt::DrainError::kNone);
    EXPECT_EQ(emitted, 4u);
    d.r.control(0)->overwritten = 7;  // past produced (6)
    lt::read_in_place(d.r.area(), d.h, 0, &c, d.dst.data(), count, &emitted, &e);
    EXPECT_EQ(e, lt::DrainError::kOverwrittenAhead);
    d.r.control(0)->overwritten = 1;  // below the 2 accepted
    lt::read_in_place(d.r.area(), d.h, 0, &c, d.dst.data(), count, &emitted, &e);
    EXPECT_EQ(e, lt::DrainError::kOverwrittenBackwards);
    EXPECT_EQ(emitted, 4u);  // nothing emitted from a broken queue
}

// The area's header rewritten after the host copied it (a drain that re-read it once crashed with
// SIGSEGV). Every address comes from the copy, so the drain neither divides by the new
// buffers_per_cpu nor follows the new offsets.
TEST(HostileDrain, HeaderRewrittenAfterTheCopyIsNotFollowed) {
    Drain d;
    ASSERT_EQ(d.r.publish(0, 2), 2u);
    lt::DrainCursor c;
    ASSERT_EQ(lt::cursor_init(d.r.area(), d.h, 0, &c), lt::DrainError::kNone);
    TraceAreaHeader* live = d.r.area_header();
    live->session.buffers_per_cpu = 0;
    live->session.buffer_size = 1u << 31;
    live->session.cpu_count = 1u << 30;
    live->control_offset = 0xFFFFFF00;
    live->buffers_offset = 1ull << 40;
    lt::DrainError e = lt::DrainError::kNone;
    EXPECT_EQ(d.take(0, &c, &e), lt::TakeResult::kTaken);
    EXPECT_EQ(d.take(0, &c, &e), lt::TakeResult::kTaken);
    EXPECT_EQ(d.take(0, &c, &e), lt::TakeResult::kEmpty);
    const TraceLossCounters t = lt::area_totals(d.r.area(), d.h);  // 2 CPUs, not 2^30
    EXPECT_EQ(t.buffers_written, 2u);
}

TEST(HostileDrain, AreaHeaderFieldsAreNamed) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    TraceAreaHeader h;
    auto parse_with = [&](auto change) {
        std::vector<uint8_t> copy(static_cast<uint8_t*>(r.area()),
                                  static_cast<uint8_t*>(r.area()) + r.area_size());
        change(*reinterpret_cast<TraceAreaHeader*>(copy.data()));
        const char* why = lt::area_parse(copy.data(), copy.size(), &h);
        return std::string(why ? why : "ok");
    };
    EXPECT_EQ(parse_with([](TraceAreaHeader&) {}), "ok");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.session.cpu_count = 65; }),
              "trace area CPU count out of range");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.session.buffers_per_cpu = 1; }),
              "trace area buffer count out of range");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.session.buffer_size = 4095; }),
              "trace area parameters out of range");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.buffers_offset = 1ull << 40; }),
              "trace buffers lie outside the trace area");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.control_offset = 64; }),
              "trace area sections overlap or are misaligned");
    EXPECT_EQ(parse_with([](TraceAreaHeader& a) { a.control_stride = 8; }),
              "trace control size differs");
}

// --- TraceRecorder: a corrupt CPU is an error, the file keeps what was taken ------------------

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// Frames of each kind in a trace file: {buffers, counters}.
std::pair<int, int> frames(const std::string& path) {
    const std::vector<uint8_t> data = read_all(path);
    TraceFileHeader fh;
    EXPECT_EQ(lt::parse_file_header(data.data(), data.size(), &fh), lt::FileError::kNone);
    size_t off = sizeof fh;
    lt::FrameView f;
    std::pair<int, int> n{0, 0};
    while (lt::next_frame(data.data(), data.size(), &off, &f) == lt::FileError::kNone)
        (f.kind == TraceFrameKind::kBuffer ? n.first : n.second)++;
    return n;
}

struct TempFile {
    std::string path = std::filesystem::temp_directory_path() /
                       ("hostile-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".trace");
    ~TempFile() { std::remove(path.c_str()); }
    static inline int counter = 0;
};

TEST(HostileRecorder, ProducedWentBackwardsNamesTheCpuAndKeepsTheFile) {
    MemRegion r(4, 4, TraceLoggerMode::kRealTime);
    TempFile out;
    TraceRecorder rec(r.path(), out.path);
    ASSERT_EQ(r.publish(3, 2), 2u);
    EXPECT_TRUE(rec.drain());
    EXPECT_EQ(rec.buffers(), 2u);
    r.control(3)->produced = 1;
    try {
        rec.drain();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt);
        EXPECT_EQ(std::string(e.what()),
                  "corrupt shared region " + r.path() + ": cpu 3: produced went backwards");
    }
    rec.abandon();
    EXPECT_EQ(frames(out.path), std::make_pair(2, 1));  // both buffers, then the counters
}

TEST(HostileRecorder, ACorruptAreaHeaderAtStartIsNamed) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.area_header()->session.cpu_count = 0;
    TempFile out;
    try {
        TraceRecorder rec(r.path(), out.path);
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt);
        EXPECT_NE(std::string(e.what()).find("trace area CPU count out of range"), std::string::npos)
            << e.what();
    }
}

TEST(HostileRecorder, AGuestRestartedSessionIsSaidNotCalledCorrupt) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    TempFile out;
    TraceRecorder rec(r.path(), out.path);
    ASSERT_EQ(r.publish(0, 2), 2u);
    rec.drain();
    // A new session from inside the guest: the area is laid out again, counters from zero.
    TraceSessionInformation s = r.area_header()->session;
    lt::SessionPlan plan{s.buffers_per_cpu, r.area_header()->control_offset, r.area_header()->buffers_offset,
                         r.area_header()->slots_offset};
    lt::area_start(r.area(), r.area_size(), 2, s, plan, 43, 5000);
    try {
        rec.drain();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitFailure);
        EXPECT_NE(std::string(e.what()).find("started trace session 43"), std::string::npos) << e.what();
    }
}

// --- RegionReader: the region header and the clock publication --------------------------------

CollectError reader_error(MemRegion& r) {
    try {
        RegionReader reader(r.path(), std::chrono::milliseconds(50));
        reader.snapshot();
        reader.clock();
    } catch (const CollectError& e) {
        return e;
    }
    return CollectError(0, "no error");
}

TEST(HostileRegionHeader, EachBadFieldIsNamed) {
    struct Case {
        const char* field;
        void (*change)(RegionHeader&);
    };
    const Case cases[] = {
        {"region_size", [](RegionHeader& h) { h.region_size = ~0ull; }},
        {"cpu_count", [](RegionHeader& h) { h.cpu_count = 65; }},
        {"header_size", [](RegionHeader& h) { h.header_size = 4; }},
        {"the section table", [](RegionHeader& h) { h.sections[3].offset = 1ull << 40; }},
        {"the section table", [](RegionHeader& h) { h.sections[0].stride = 8; }},
        {"the section table", [](RegionHeader& h) { h.sections[1].offset = h.sections[0].offset; }},
    };
    for (const Case& c : cases) {
        MemRegion r(2, 4, TraceLoggerMode::kRealTime);
        c.change(*r.header());
        const CollectError e = reader_error(r);
        EXPECT_EQ(e.exit_code(), kExitCorrupt) << c.field << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(std::string("region header: ") + c.field),
                  std::string::npos)
            << e.what();
    }
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.header()->abi_version = 99;  // another ABI: exit 4, as before
    EXPECT_EQ(reader_error(r).exit_code(), kExitAbi);
}

// Both readers of the region judge its header alike (attach_layout): a region of another ABI
// version is exit 4 with both versions named for `trace record` as for the counters, and the
// recorder leaves no descriptor open (the drain's own mapper once leaked it on a throw).
TEST(HostileRegionHeader, AnotherAbiVersionIsNamedAlikeByBothReaders) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.header()->abi_version = 99;
    const std::string reader_says = reader_error(r).what();
    EXPECT_NE(reader_says.find("ABI version mismatch: the shared region " + r.path() +
                               " has region ABI 99"),
              std::string::npos)
        << reader_says;
    TempFile out;
    const auto open_fds = [] {
        return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {});
    };
    const auto before = open_fds();
    try {
        TraceRecorder rec(r.path(), out.path);
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitAbi);
        EXPECT_EQ(std::string(e.what()), reader_says);
    }
    EXPECT_EQ(open_fds(), before);
}

// Attached, the reader re-reads the header only at a new generation; a header broken then is a
// corrupt region (a fresh attach would call the same bytes "not set up yet", exit 3).
TEST(HostileRegionHeader, BrokenAfterAttachIsCorrupt) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    reader.snapshot();
    r.header()->generation += 2;       // a new generation ...
    r.header()->cpu_count = 1000;      // ... whose header is broken
    try {
        reader.snapshot();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt);
        EXPECT_NE(std::string(e.what()).find("after a new generation: cpu_count"), std::string::npos)
            << e.what();
    }
    MemRegion q(2, 4, TraceLoggerMode::kRealTime);
    RegionReader stuck(q.path(), std::chrono::milliseconds(50));
    q.header()->generation |= 1;  // "being laid out", for ever
    try {
        stuck.snapshot();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt) << e.what();
    }
}

// What a CPU's acquisitions count is read and checked: a Linux guest's contended-only word is
// passed on; a value the ABI does not name is a corrupt region naming the CPU and the field.
TEST(HostileRegionHeader, AcquisitionsCountedIsReadAndAnUnknownValueNamed) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    EXPECT_EQ(acquisitions_counted(reader.snapshot()), AcquisitionsCounted::kEveryAcquisition);
    r.perf(1)->acquisitions_counted = uint32_t(AcquisitionsCounted::kContendedOnly);
    const Snapshot s = reader.snapshot();
    EXPECT_EQ(s.cpus[0].acquisitions_counted, AcquisitionsCounted::kEveryAcquisition);
    EXPECT_EQ(s.cpus[1].acquisitions_counted, AcquisitionsCounted::kContendedOnly);
    r.perf(1)->acquisitions_counted = 7;
    try {
        reader.snapshot();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt);
        EXPECT_NE(std::string(e.what()).find("cpu 1: acquisitions_counted is 7, not one of 0 (every), "
                                             "1 (contended-only)"),
                  std::string::npos)
            << e.what();
    }
}

// A layout of 4 CPUs and a publication of CPU 1 that passes check_clock, for one field to break.
constexpr ClockReading kGoodClock{2, 1000, 5, 1, 10'000};
RegionLayout four_cpus() {
    RegionLayout l{};
    l.cpu_count = 4;
    return l;
}

TEST(HostileClock, EachBadFieldIsNamed) {
    const RegionLayout l = four_cpus();
    ClockReading ok = kGoodClock;
    EXPECT_EQ(check_clock(ok, l, nullptr), "");
    ClockReading r = ok;
    r.cpu = 4;
    EXPECT_EQ(check_clock(r, l, nullptr), "clock publication: cpu 4 is not below cpu_count 4");
    r = ok;
    r.period_us = 0;
    EXPECT_EQ(check_clock(r, l, nullptr),
              "cpu 1: clock publication: period_us 0 is outside 1..1000000");
    r.period_us = kMaxClockPeriodUs + 1;
    EXPECT_NE(check_clock(r, l, nullptr), "");
    r = ok;
    r.count = 4;
    EXPECT_EQ(check_clock(r, l, &ok), "cpu 1: clock publication: count went backwards (4 after 5)");
}

TEST(HostileClock, EachBadReferenceFieldIsNamed) {
    const RegionLayout l = four_cpus();
    ClockReading ok = kGoodClock;
    ok.ref_source = uint32_t(ClockReference::kHpet);
    ok.ref_period_fs = 10'000'000;
    ok.ref_ticks = 123;
    ok.ref_guest_tsc = 990;
    EXPECT_EQ(check_clock(ok, l, nullptr), "");
    ClockReading r = ok;
    r.ref_source = 2;
    EXPECT_EQ(check_clock(r, l, nullptr), "cpu 1: clock publication: ref_source 2 is not one the ABI names");
    r = ok;
    r.ref_period_fs = 0;
    EXPECT_EQ(check_clock(r, l, nullptr), "cpu 1: clock publication: ref_period_fs 0 is outside 1..100000000");
    r.ref_period_fs = kMaxClockRefPeriodFs + 1;
    EXPECT_NE(check_clock(r, l, nullptr), "");
    r = ok;
    r.ref_guest_tsc = 1001;
    EXPECT_EQ(check_clock(r, l, nullptr),
              "cpu 1: clock publication: ref_guest_tsc 1001 is after guest_tsc 1000 (the reference is read between them)");
    r = ok;  // no reference: the other fields are not looked at (a region from before them reads zeros)
    r.ref_source = uint32_t(ClockReference::kNone);
    r.ref_guest_tsc = 5000;
    EXPECT_EQ(check_clock(r, l, nullptr), "");
}

// A publication with a reference goes through the seqcount whole.
TEST(HostileClock, AReferenceIsPublishedAndReadWhole) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    ClockRef ref;
    ref.ticks = 777;
    ref.guest_tsc = 4990;
    ref.period_fs = 10'000'000;
    ref.source = ClockReference::kHpet;
    ASSERT_TRUE(clock_publish(r.clock(), 5000, 1, 10'000, 0, ref));
    auto c = reader.clock();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->ref_ticks, 777u);
    EXPECT_EQ(c->ref_guest_tsc, 4990u);
    EXPECT_EQ(c->ref_period_fs, 10'000'000u);
    EXPECT_EQ(c->ref_source, uint32_t(ClockReference::kHpet));
    r.clock()->ref_source = 9;  // a guest that scribbles over it: corrupt, named
    r.clock()->seq += 2;
    try {
        reader.clock();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_NE(std::string(e.what()).find("ref_source 9 is not one the ABI names"), std::string::npos) << e.what();
    }
}

// A guest that lays the region out before its first publication (a Linux guest's agent publishes
// from a thread of its own, 10 ms later): no reading yet, not a corrupt region; the first
// publication is read.
TEST(HostileClock, NotYetPublishedIsNoReadingNotCorrupt) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.clock()->count = 0;
    r.clock()->guest_tsc = 0;
    r.clock()->period_us = 0;
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    EXPECT_FALSE(reader.clock().has_value());
    r.clock()->guest_tsc = 1000;
    r.clock()->count = 1;
    r.clock()->period_us = 10'000;
    ASSERT_TRUE(reader.clock().has_value());
    EXPECT_EQ(reader.clock()->count, 1u);
}

TEST(HostileClock, TheReaderThrowsNamingTheField) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    ASSERT_TRUE(reader.clock().has_value());
    r.clock()->period_us = 0;
    try {
        reader.clock();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitCorrupt);
        EXPECT_NE(std::string(e.what()).find("period_us 0"), std::string::npos) << e.what();
    }
    r.clock()->period_us = 10'000;
    r.clock()->count = 0;  // was 1
    try {
        reader.clock();
        FAIL() << "no error";
    } catch (const CollectError& e) {
        EXPECT_NE(std::string(e.what()).find("count went backwards"), std::string::npos) << e.what();
    }
}

TEST(HostileClock, AGuestRebootIsNotABackwardsCount) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    RegionReader reader(r.path(), std::chrono::milliseconds(50));
    for (int i = 0; i < 5; i++) clock_publish(r.clock(), 2000 + i * 100, 0, 10'000);
    ASSERT_EQ(reader.clock()->count, 6u);
    ASSERT_EQ(region_layout(r.base(), r.size(), 2, 2'000'000'000, 1), RegionError::kNone);
    clock_publish(r.clock(), 1000, 0, 10'000);  // count 1 in the new generation
    EXPECT_EQ(reader.clock()->count, 1u);
}

// --- perf data: counts are numbers, never trusted to grow ---------------------------------------

TEST(HostileSnapshot, ACountBelowTheLastIsARestartNotAWrappedDelta) {
    Snapshot a, b;
    a.cpus.push_back(empty_cpu(0));
    b.cpus.push_back(empty_cpu(0));
    a.cpus[0].classes[3].acquisitions = 100;
    a.cpus[0].classes[3].uncontended = 90;
    b.cpus[0].classes[3].acquisitions = 7;  // below: reset (or nonsense), same `resets`
    b.cpus[0].classes[3].uncontended = 95;
    const Snapshot d = snapshot_delta(b, a);
    EXPECT_EQ(d.cpus[0].classes[3].acquisitions, 7u);
    EXPECT_EQ(d.cpus[0].classes[3].uncontended, 95u);
}

}  // namespace
}  // namespace spinlab::collect
