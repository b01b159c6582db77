// collector/trace/trace_recorder_test.cc: RealTimeBuffersLost as the recorder keeps it: every
// buffer the host took (or read in place) but did not deliver to the file is counted in the
// area's realtime_buffers_lost, so buffers in the file + RealTimeBuffersLost = buffers taken.
// A full disk (a 1 MiB tmpfs mounted by the test, in a mount namespace of its own so that no
// exit path leaves it behind), a buffer torn while a circular session is read in place, and the
// snapshot of a running circular session (`trace flush --output`).
#include "trace/trace_recorder.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "locktrace/buffer_parser.h"
#include "locktrace/trace_file.h"
#include "testing/mem_region.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;
using testing::MemRegion;

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// Buffer frames in a trace file, and whether it ends on a whole frame.
struct FileFrames {
    uint64_t buffers = 0;
    uint64_t counters = 0;
    bool whole = false;
};
FileFrames frames_of(const std::string& path) {
    const std::vector<uint8_t> data = read_all(path);
    FileFrames f;
    TraceFileHeader h;
    if (lt::parse_file_header(data.data(), data.size(), &h) != lt::FileError::kNone) return f;
    size_t off = sizeof h;
    lt::FrameView v;
    lt::FileError e;
    while ((e = lt::next_frame(data.data(), data.size(), &off, &v)) == lt::FileError::kNone) {
        if (v.kind == TraceFrameKind::kBuffer) f.buffers++;
        if (v.kind == TraceFrameKind::kCounters) f.counters++;
    }
    f.whole = e == lt::FileError::kEnd;
    return f;
}

// A tmpfs of `bytes` at a fresh directory, in a private mount namespace of this process (ctest
// runs each test in its own process): the mount goes with the process on every exit path, and
// the destructor unmounts it before that. ok() is false where mounting is not allowed (not
// root, no CAP_SYS_ADMIN): the test is skipped then, saying why.
class SmallTmpfs {
public:
    explicit SmallTmpfs(uint64_t bytes) {
        char tmpl[] = "/tmp/spinlab-full-XXXXXX";
        if (!mkdtemp(tmpl)) {
            why_ = "mkdtemp failed";
            return;
        }
        dir_ = tmpl;
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            why_ = "no private mount namespace (needs root)";
            return;
        }
        const std::string opts = "size=" + std::to_string(bytes);
        if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
            why_ = "cannot mount a tmpfs (needs root)";
            return;
        }
        mounted_ = true;
    }
    ~SmallTmpfs() {
        if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
        if (!dir_.empty()) rmdir(dir_.c_str());
    }
    SmallTmpfs(const SmallTmpfs&) = delete;
    SmallTmpfs& operator=(const SmallTmpfs&) = delete;
    bool ok() const { return mounted_; }
    const std::string& why() const { return why_; }
    std::string path(const std::string& name) const { return dir_ + "/" + name; }

private:
    std::string dir_;
    std::string why_;
    bool mounted_ = false;
};

// 90 events of 40 bytes: 3,664-byte buffers, 3,680-byte frames; 1 MiB holds about 284 of them.
constexpr uint32_t kEvents = 90;

TEST(TraceRecorderLosses, BuffersThatCannotBeWrittenToAFullDiskAreRealTimeBuffersLost) {
    SmallTmpfs fs(1 << 20);
    if (!fs.ok()) GTEST_SKIP() << fs.why();
    MemRegion r(2, 8, TraceLoggerMode::kRealTime);
    const std::string file = fs.path("out.trace");
    TraceRecorder rec(r.path(), file);
    uint64_t published = 0;
    for (int round = 0; round < 60; round++) {  // 480 buffers: ~1.7 MiB of frames
        for (uint32_t k = 0; k < 2; k++) published += r.publish(k, 4, kEvents);
        rec.drain();
    }
    rec.finish();  // the counters frame does not fit either: the file ends on its last buffer
    const TraceLossCounters t = rec.totals();
    const FileFrames f = frames_of(file);
    std::printf("%lu buffers published, %lu in the file, RealTimeBuffersLost %lu, %s\n",
                (unsigned long)published, (unsigned long)rec.buffers(),
                (unsigned long)t.realtime_buffers_lost, rec.write_error().c_str());
    EXPECT_EQ(published, 480u);
    EXPECT_GT(t.realtime_buffers_lost, 0u);
    EXPECT_EQ(rec.buffers() + t.realtime_buffers_lost, published);
    EXPECT_EQ(rec.undelivered(), t.realtime_buffers_lost);
    EXPECT_NE(rec.write_error().find("No space left on device"), std::string::npos) << rec.write_error();
    // What was written stays readable: whole frames only, exactly the buffers counted.
    EXPECT_TRUE(f.whole);
    EXPECT_EQ(f.buffers, rec.buffers());
    EXPECT_LE(std::filesystem::file_size(file), uint64_t(1) << 20);
}

TEST(TraceRecorderLosses, ABufferTornWhileReadInPlaceIsRealTimeBuffersLost) {
    MemRegion r(1, 4, TraceLoggerMode::kCircular);
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "spinlab-torn.trace";
    ASSERT_EQ(r.publish(0, 4), 4u);
    TraceRecorder rec(r.path(), file.string());
    // Buffer 2 no longer says it is buffer 2 (as when the CPU overwrote it during the copy).
    uint8_t* slot2 = lt::area_buffer(r.area(), 0, lt::area_slots(r.area(), 0)[2]);
    reinterpret_cast<TraceBufferHeader*>(slot2)->sequence = 9;
    rec.finish();
    EXPECT_EQ(rec.buffers(), 3u);
    EXPECT_EQ(rec.totals().realtime_buffers_lost, 1u);
    EXPECT_EQ(rec.undelivered(), 1u);
    EXPECT_EQ(frames_of(file.string()).buffers, 3u);
    std::filesystem::remove(file);
}

// `trace record` checks its duration and Ctrl-C between drain() calls: one call must return
// even while the guest publishes as fast as the host writes (here faster: each frame fsync'd).
// drain() used to take buffers until none was left, and never returned against such a guest.
TEST(TraceRecorderDrain, ReturnsWhileTheGuestKeepsPublishing) {
    MemRegion r(1, 8, TraceLoggerMode::kRealTime);
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "spinlab-drain-bound.trace";
    TraceRecorder rec(r.path(), file.string(), /*fsync_each=*/true);
    std::atomic<bool> stop{false};
    std::thread producer([&] {
        while (!stop.load()) r.publish(0, 1, kEvents);
    });
    auto one_call = std::async(std::launch::async, [&] {
        rec.drain();
        return rec.buffers();
    });
    const bool returned = one_call.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    stop = true;
    producer.join();
    const uint64_t taken = one_call.get();
    EXPECT_TRUE(returned) << "one drain() ran for 10 s while the guest kept publishing (" << taken
                          << " buffers taken by the time the guest stopped)";
    EXPECT_LE(taken, 8u);  // buffers_per_cpu of the one CPU
    rec.finish();
    std::filesystem::remove(file);
}

// `trace flush --output`: the flight recorder's contents now, the session left running (the
// area is only read: the writer keeps overwriting), twice in a row.
TEST(TraceRecorderSnapshot, ReadsARunningCircularSessionWithoutStoppingIt) {
    MemRegion r(2, 4, TraceLoggerMode::kCircular);
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "spinlab-snap.trace";
    ASSERT_EQ(r.publish(0, 6), 6u);  // 2 overwritten
    ASSERT_EQ(r.publish(1, 1), 1u);
    write_trace_snapshot(r.path(), file.string());
    FileFrames f = frames_of(file.string());
    EXPECT_EQ(f.buffers, 4u + 1u);
    EXPECT_EQ(f.counters, 1u);
    EXPECT_TRUE(f.whole);
    EXPECT_EQ(r.area_header()->session.state, uint32_t(TraceState::kRunning));
    ASSERT_EQ(r.publish(1, 5), 5u);  // the session goes on
    write_trace_snapshot(r.path(), file.string());
    f = frames_of(file.string());
    EXPECT_EQ(f.buffers, 4u + 4u);
    std::filesystem::remove(file);
}

}  // namespace
}  // namespace spinlab::collect

namespace spinlab::collect {
namespace {

// poll_interval(): 2 ms while nothing comes; while buffers come fast, a quarter of the time a
// CPU's buffers take to fill, at least 50 us; back to 2 ms once they stop. How fast the test
// publishes is the host's: the interval is judged against the rate the test itself reached. The
// recorder's rate is its last 2 ms window's (or half the one before, if more): a window the
// host took the test's thread away for halves it, so up to 8x the interval that rate implies is
// allowed. Seen: 52 us where the floor was expected, 544 buffers in 10 ms beside a busy loop.
TEST(TraceRecorderPoll, WaitsLessWhileBuffersComeFast) {
    MemRegion r(1, 8, TraceLoggerMode::kRealTime);
    const std::string file = std::string("/tmp/spinlab-poll-") + std::to_string(getpid()) + ".trace";
    {
        TraceRecorder rec(r.path(), file);
        EXPECT_EQ(rec.poll_interval(), std::chrono::microseconds(2000));
        // Buffers as fast as the test can publish them, for at least two 2 ms windows.
        const auto start = std::chrono::steady_clock::now();
        const auto end = start + std::chrono::milliseconds(10);
        uint64_t published = 0;
        while (std::chrono::steady_clock::now() < end) {
            published += r.publish(0, 4, kEvents);
            rec.drain();
        }
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ASSERT_GT(published, 0u);
        // 8 buffers per CPU: they fill in 8 / (published / secs) seconds; a quarter of that.
        const double implied_us = std::clamp(8.0 * secs / double(published) / 4 * 1e6, 50.0, 2000.0);
        const auto got = rec.poll_interval();
        EXPECT_GE(got, std::chrono::microseconds(50)) << "the floor";
        EXPECT_LT(got, std::chrono::microseconds(2000)) << "no adaptation: " << published << " buffers in "
                                                          << secs * 1e3 << " ms";
        EXPECT_LE(double(got.count()), 8 * implied_us)
            << published << " buffers in " << secs * 1e3 << " ms imply " << implied_us << " us";
        // Nothing more: every quieter window halves the rate seen, until the interval is 2 ms again.
        for (int i = 0; i < 60; i++) {
            std::this_thread::sleep_for(std::chrono::microseconds(2100));
            rec.drain();
        }
        EXPECT_EQ(rec.poll_interval(), std::chrono::microseconds(2000));
        rec.finish();
    }
    std::filesystem::remove(file);
}

}  // namespace
}  // namespace spinlab::collect
