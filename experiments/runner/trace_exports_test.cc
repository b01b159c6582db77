// experiments/runner/trace_exports_test.cc: [trace] export after a repetition: a trace file
// written with the kernel's writer and the host's drain into <results>/snapshots/, exported to
// trace-export/ in both formats, with and without a clock correlation; a damaged trace is said.
#include "trace_exports.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "locktrace/drain.h"
#include "locktrace/test_area.h"
#include "locktrace/trace_file.h"
#include "locktrace/writer.h"

namespace fs = std::filesystem;

namespace spinlab::run {
namespace {

namespace lt = locktrace;

// A results directory with snapshots/x-r1.trace: n contended spinlock events on CPU 1.
std::string results_with_trace(const std::string& name, uint32_t n) {
    const std::string dir = ::testing::TempDir() + "trace_exports_" + std::to_string(getpid()) + "_" + name;
    fs::remove_all(dir);
    fs::create_directories(dir + "/snapshots");
    auto a = lt::testing::make_area(2, 4096, 4, TraceLoggerMode::kRealTime);
    const TraceAreaHeader& h = a.header();
    std::ofstream f(dir + "/snapshots/x-r1.trace", std::ios::binary);
    const TraceFileHeader fh = lt::make_file_header(h.session, 2, 1'000'000'000);
    f.write(reinterpret_cast<const char*>(&fh), sizeof fh);
    lt::Writer w;
    lt::writer_arm(w, a.area(), 1);
    std::vector<uint8_t> buf(4096);
    auto drain = [&] {
        uint32_t len = 0;
        while (lt::take_buffer(a.area(), h, 1, buf.data(), &len) == lt::TakeResult::kTaken) {
            const TraceFrameHeader fr = lt::make_frame_header(TraceFrameKind::kBuffer, buf.data(), len);
            f.write(reinterpret_cast<const char*>(&fr), sizeof fr);
            f.write(reinterpret_cast<const char*>(buf.data()), len);
        }
    };
    for (uint32_t i = 0; i < n; i++) {
        auto* e = static_cast<TraceSpinlockEvent*>(lt::begin_write(w, sizeof(TraceSpinlockEvent)));
        std::memset(e, 0, sizeof *e);
        const uint64_t t = 10'000 + 1000 * i;
        lt::fill_header(e->h, sizeof *e, TraceEventType::kSpinlock, 1, 7, 1, t);
        e->acquire_tsc = t - 10;
        e->release_tsc = t;
        e->wait_cycles = 500;
        e->spin_count = 3;
        e->holder_cpu_start = e->holder_cpu_end = 0;
        e->flags = kTraceSpinContended;
        lt::end_write(w, sizeof *e, t);
        drain();
    }
    lt::flush(w, kTraceBufferFinal);
    drain();
    return dir;
}

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TraceExports, BothFormatsBesideTheResultsWithHostTime) {
    const std::string dir = results_with_trace("both", 100);
    collect::ClockFit fit;
    fit.ok = true;
    fit.points = {{0, 5'000'000'000, 100}, {10'000'000, 5'000'000'000, 100}};
    // Host time goes on the host's rate (the runner sets it from meta.json): without it the
    // Perfetto export is refused with a sentence, and the CTF one still written.
    const std::string refused = export_repetition(dir, "x-r1", {"perfetto"}, &fit);
    EXPECT_NE(refused.find("no host TSC rate"), std::string::npos) << refused;
    fit.host_tsc_hz = 1'000'000'000;
    EXPECT_EQ(export_repetition(dir, "x-r1", {"ctf", "perfetto"}, &fit), "");
    const std::string ctf = dir + "/trace-export/x-r1.ctf";
    const std::string metadata = read(ctf + "/metadata");
    EXPECT_EQ(metadata.rfind("/* CTF 1.8 */", 0), 0u);
    EXPECT_NE(metadata.find("offset_s = 5;"), std::string::npos) << metadata;  // 5e9 cycles at 1 GHz
    EXPECT_GT(fs::file_size(ctf + "/stream_1"), 100u * sizeof(TraceSpinlockEvent) - 100u * 24u);
    const std::string json = read(dir + "/trace-export/x-r1.json");
    EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u);
    // The first wait starts at guest 9490 = host 5000009490 cycles = 5000009.49 us.
    const std::string key = "\"cat\":\"spinlock\",\"ts\":";
    const size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << json.substr(0, 600);
    EXPECT_NEAR(std::strtod(json.c_str() + at + key.size(), nullptr), 5000009.49, 1e-6);
    EXPECT_FALSE(fs::exists(dir + "/snapshots/x-r1.json"));  // nothing the analysis would take for a snapshot
    fs::remove_all(dir);
}

TEST(TraceExports, WithoutAClockItSaysSoAndAMissingTraceIsNamed) {
    const std::string dir = results_with_trace("noclock", 3);
    EXPECT_NE(export_repetition(dir, "x-r1", {"perfetto"}, nullptr).find("guest time"), std::string::npos);
    EXPECT_TRUE(fs::exists(dir + "/trace-export/x-r1.json"));
    EXPECT_FALSE(fs::exists(dir + "/trace-export/x-r1.ctf"));
    const std::string p = export_repetition(dir, "y-r2", {"ctf"}, nullptr);
    EXPECT_NE(p.find("no ctf export of y-r2.trace"), std::string::npos) << p;
    EXPECT_EQ(export_repetition(dir, "x-r1", {}, nullptr), "");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace spinlab::run
