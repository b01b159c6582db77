// collector/trace/trace_recorder_benchmark.cc (target trace_recorder_benchmark): how fast the
// collector's TraceRecorder moves spinlock events from the shared region into a trace file on
// disk, what host CPU that costs per event, and at which event rate a real-time session starts
// to lose events. This is the path of `spinlab-collect trace record`, not a copy loop.
//
//   BM_RecordToFile/<events/s offered>/<crc>: a region file in /dev/shm laid out as the guest lays out
//     its own (region_layout, then area_start with the default session: 64 KiB buffers, up to 64
//     per CPU, real-time). One producer thread plays a guest CPU: it writes spinlock events
//     through the kernel's release path (trace_spinlock_release: the sampling rules,
//     begin_write, the 104-byte event, end_write), paced by the TSC to the offered rate (event i
//     is due at i / rate; 0: flat out). The consumer is the real TraceRecorder writing a real
//     file (in $SPINLAB_BENCH_DIR, default /var/tmp), driven as `trace record` drives it: drain()
//     until nothing is published, then a sleep of poll_interval(). After 0.5 s the producer
//     flushes its last buffer and stops, finish() writes what is left and the counters frame
//     (the wall time runs until then), and the file is checked: its size is what the recorder
//     says it wrote and the events in it are the ones the writer counts as written. The file
//     is removed afterwards. <crc> 1: the CRC-32C crc32c_update chooses (SSE4.2 where the CPU
//     has it); 0: the table forced, for the ratio within one run.
//   Where a recorded event's time goes, each part alone on 64 KiB buffers of real events, in CPU
//   seconds per event (counter seconds_per_event; a 64 KiB buffer holds about 630 events of 104 bytes):
//     BM_TakeBuffer: take_buffer (the copy out of the area and the check of every event header)
//     BM_Crc32c/0 (table) and /1 (SSE4.2): the frame's CRC-32C
//     BM_WriteFrame: one write(2) of a 64 KiB frame to a file in $SPINLAB_BENCH_DIR
//
// Counters of BM_RecordToFile (per repetition; quote the medians): events_per_s and MB_per_s
// into the file (over the wall time), offered_events_per_s (what the producer wrote, lost
// included), events_lost and lost_share (the writer's EventsLost), recorder_ns_per_event (the
// recorder thread's CPU time per event recorded) and recorder_cpu_share (of one CPU). The
// context names the file system the file was on and the CRC-32C implementation.
//   trace_recorder_benchmark --benchmark_out=FILE --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "channel/crc32c.h"
#include "channel/region_header.h"
#include "lockstat/clock.h"
#include "lockstat/params.h"
#include "locktrace/bench_clock.h"
#include "locktrace/drain.h"
#include "locktrace/spinlock_event.h"
#include "locktrace/trace_session.h"
#include "locktrace/writer.h"
#include "trace_recorder.h"

namespace spinlab::collect {
namespace {

using locktrace::testing::thread_cpu_ns;
using locktrace::testing::tsc_hz;

namespace lt = locktrace;
using lockstat::LfenceRdtsc;

constexpr auto kRecordFor = std::chrono::milliseconds(500);

std::string bench_dir() {
    const char* d = std::getenv("SPINLAB_BENCH_DIR");
    return d && *d ? d : "/var/tmp";
}

// The file system type of `dir`, by its magic number (statfs(2)).
std::string fs_name(const std::string& dir) {
    struct statfs s;
    if (statfs(dir.c_str(), &s) != 0) return "unknown";
    switch (static_cast<unsigned long>(s.f_type)) {
        case 0xEF53: return "ext4";
        case 0x01021994: return "tmpfs";
        case 0x58465342: return "xfs";
        case 0x9123683E: return "btrfs";
        case 0x794C7630: return "overlayfs";
    }
    return "magic " + std::to_string(static_cast<unsigned long>(s.f_type));
}

// The bytes a finished one-CPU trace file has: its header, the buffer frames, the counters frame.
uint64_t file_bytes(const TraceRecorder& r) {
    return sizeof(TraceFileHeader) + r.buffers() * sizeof(TraceFrameHeader) + r.bytes() +
           sizeof(TraceFrameHeader) + sizeof(TraceCpuCounters);
}

// A one-CPU guest region in /dev/shm with a running session of the default parameters.
class ShmRegion {
public:
    ShmRegion() {
        path_ = "/dev/shm/spinlab-bench-recorder-" + std::to_string(getpid());
        TraceSessionInformation p = lt::default_session_params();
        p.enable_flags = kTraceGroupSpinlock;
        const uint64_t trace = lt::trace_area_needed(p.buffer_size, p.maximum_buffers, 1);
        size_ = region_size_needed(1, trace);
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd_ < 0 || ftruncate(fd_, off_t(size_)) != 0) throw std::runtime_error("cannot create " + path_);
        void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (m == MAP_FAILED) throw std::runtime_error("cannot map " + path_);
        base_ = static_cast<uint8_t*>(m);
        RegionLayout l;
        if (region_layout(base_, size_, 1, 2'000'000'000, LfenceRdtsc::now()) != RegionError::kNone ||
            region_parse(base_, size_, &l) != RegionError::kNone)
            throw std::runtime_error("region_layout");
        const RegionSectionEntry& t = l.section(RegionSection::kTrace);
        area_ = base_ + t.offset;
        area_size_ = t.size;
        lt::SessionPlan plan;
        if (!lt::plan_session(p, t.size, 1, &plan)) throw std::runtime_error("plan_session");
        lt::area_start(area_, t.size, 1, p, plan, 1, LfenceRdtsc::now());
    }
    ~ShmRegion() {
        munmap(base_, size_);
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    ShmRegion(const ShmRegion&) = delete;
    ShmRegion& operator=(const ShmRegion&) = delete;
    const std::string& path() const { return path_; }
    void* area() const { return area_; }
    uint64_t area_size() const { return area_size_; }

private:
    std::string path_;
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    void* area_ = nullptr;
    uint64_t area_size_ = 0;
    uint64_t size_ = 0;
};

// The CPU's side: contended releases of one lock through the kernel's release path; every one
// is an event (SpinThreshold 1, ContentionSampleRate 1: the defaults).
class Producer {
public:
    explicit Producer(void* area) {
        lt::writer_arm(w_, area, 0);
        spinlock::lock_init(lock_, "bench", 3);
        lock_.trace.contended = 1;
        lock_.trace.spins = 1;
        lock_.trace.holder_cpu_start = lock_.trace.holder_cpu_end = 1;
        ctx_ = {&w_, &countdowns_, &params_, kTraceGroupSpinlock, ~0ull, 5, 1};
    }
    // Writes events for `duration` at `rate` events/s (0: flat out), then flushes its last
    // buffer and sets `done`.
    void run(std::chrono::steady_clock::duration duration, uint64_t rate, std::atomic<bool>& done) {
        const double hz = tsc_hz();  // measured on the first call: before t0
        const uint64_t t0 = LfenceRdtsc::now();
        const uint64_t end = t0 + uint64_t(std::chrono::duration<double>(duration).count() * hz);
        const double cycles_per_event = rate ? hz / double(rate) : 0;
        for (uint64_t i = 0;; i++) {
            uint64_t now = LfenceRdtsc::now();
            if (now >= end) break;
            if (rate) {
                const uint64_t due = t0 + uint64_t(double(i) * cycles_per_event);
                while (now < due) now = LfenceRdtsc::now();
            }
            lock_.trace.acquire_tsc = now - 200;
            lock_.trace.wait_cycles = 100;
            lt::trace_spinlock_release(ctx_, lock_, now);
        }
        lt::flush(w_, kTraceBufferFinal);
        done = true;
    }
    const TraceCpuControl& counters() const { return *w_.ctl; }

private:
    lt::Writer w_;
    spinlock::Lock lock_{};
    lt::SampleCountdowns countdowns_{};
    lockstat::SpinlockParams params_ = lockstat::kDefaultSpinlockParams;
    lt::ReleaseContext ctx_{};
};

void BM_RecordToFile(benchmark::State& state) {
    const uint64_t rate = uint64_t(state.range(0));
    crc32c_force_table(state.range(1) == 0);  // /0: the table CRC, as before SSE4.2 was used
    state.SetLabel(crc32c_implementation());
    const std::string file = bench_dir() + "/spinlab-bench-" + std::to_string(getpid()) + ".trace";
    for (auto _ : state) {
        ShmRegion region;
        Producer cpu(region.area());
        TraceRecorder rec(region.path(), file);
        std::atomic<bool> done{false};
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t cpu0 = thread_cpu_ns();
        std::thread producer([&] { cpu.run(kRecordFor, rate, done); });
        // The producer stops itself after kRecordFor; drain() returns after one round of slots,
        // as in `trace record`'s loop.
        while (!done.load())
            if (!rec.drain()) std::this_thread::sleep_for(rec.poll_interval());
        producer.join();
        rec.finish();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double recorder_ns = double(thread_cpu_ns() - cpu0);
        const TraceCpuControl& k = cpu.counters();
        state.counters["events_per_s"] = double(rec.events()) / secs;
        state.counters["offered_events_per_s"] = double(k.events_attempted) / secs;
        state.counters["MB_per_s"] = double(std::filesystem::file_size(file)) / secs / 1e6;
        state.counters["events_lost"] = double(k.events_lost);
        state.counters["lost_share"] = double(k.events_lost) / double(k.events_attempted);
        state.counters["recorder_ns_per_event"] = recorder_ns / double(rec.events());
        state.counters["recorder_cpu_share"] = recorder_ns / 1e9 / secs;
        if (rec.events() != k.events_written) state.SkipWithError("events in the file != events written");
        if (std::filesystem::file_size(file) != file_bytes(rec)) state.SkipWithError("the file's size is not what was recorded");
        std::filesystem::remove(file);
    }
    crc32c_force_table(false);
}
// /<rate>/1: the CRC chosen at run time (SSE4.2 where the CPU has it); /10000000/0: the table
// CRC in the same run, for the ratio.
BENCHMARK(BM_RecordToFile)->Args({0, 1})->Args({20'000'000, 1})->Args({15'000'000, 1})->Args({12'000'000, 1})->Args({10'000'000, 1})->Args({5'000'000, 1})
    ->Args({1'000'000, 1})->Args({10'000'000, 0})
    ->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

// A region whose one CPU has published a full round of buffers of real spinlock events, and
// the area's header as the recorder reads it.
struct FullArea {
    ShmRegion region;
    TraceAreaHeader h{};
    FullArea() {
        Producer cpu(region.area());
        std::atomic<bool> done{false};
        cpu.run(std::chrono::milliseconds(1), 0, done);  // far more than 64 buffers: the rest lost
        if (lt::area_parse(region.area(), region.area_size(), &h) != nullptr) throw std::runtime_error("area_parse");
    }
};

// Events per full 64 KiB buffer (the payload of one frame), for per-event figures.
double events_per_buffer(const uint8_t* buf) {
    return double(reinterpret_cast<const TraceBufferHeader*>(buf)->event_count);
}

void BM_TakeBuffer(benchmark::State& state) {
    FullArea a;
    std::vector<uint8_t> dst(a.h.session.buffer_size);
    lt::DrainCursor c0;
    lt::cursor_init(a.region.area(), a.h, 0, &c0);
    uint64_t events = 0;
    for (auto _ : state) {
        // The first published buffer, taken again and again from the same cursor.
        lt::DrainCursor c = c0;
        uint32_t len;
        lt::DrainError e = lt::DrainError::kNone;
        const lt::TakeResult r = lt::take_buffer(a.region.area(), a.h, 0, &c, dst.data(), &len, &e);
        if (r != lt::TakeResult::kTaken) {
            std::fprintf(stderr, "take_buffer: result %d, %s\n", int(r), lt::drain_error_name(e));
            state.SkipWithError("take_buffer");
            break;
        }
        events += uint64_t(events_per_buffer(dst.data()));
    }
    state.counters["seconds_per_event"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetBytesProcessed(int64_t(state.iterations()) * a.h.session.buffer_size);
}
BENCHMARK(BM_TakeBuffer)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_Crc32c(benchmark::State& state) {
    const bool hw = state.range(0) == 1;
    if (hw && !crc32c_hw_available()) {
        state.SkipWithError("this CPU has no SSE4.2");
        return;
    }
    FullArea a;
    std::vector<uint8_t> buf(a.h.session.buffer_size);
    uint32_t len;
    if (lt::take_buffer(a.region.area(), a.h, 0, buf.data(), &len) != lt::TakeResult::kTaken) {
        state.SkipWithError("take_buffer: no full buffer");
        return;
    }
    const double per_buffer = events_per_buffer(buf.data());
    uint32_t crc = 0;
    for (auto _ : state) {
        crc = hw ? crc32c_update_hw(0, buf.data(), len) : crc32c_update_table(0, buf.data(), len);
        benchmark::DoNotOptimize(crc);
    }
    state.counters["seconds_per_event"] = benchmark::Counter(double(state.iterations()) * per_buffer,
                                                        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetBytesProcessed(int64_t(state.iterations()) * len);
    state.SetLabel(hw ? "sse4.2" : "table");
}
BENCHMARK(BM_Crc32c)->Arg(0)->Arg(1)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_WriteFrame(benchmark::State& state) {
    FullArea a;
    std::vector<uint8_t> buf(sizeof(TraceFrameHeader) + a.h.session.buffer_size);
    uint32_t len;
    if (lt::take_buffer(a.region.area(), a.h, 0, buf.data() + sizeof(TraceFrameHeader), &len) !=
        lt::TakeResult::kTaken) {
        state.SkipWithError("take_buffer: no full buffer");
        return;
    }
    const double per_buffer = events_per_buffer(buf.data() + sizeof(TraceFrameHeader));
    const std::string file = bench_dir() + "/spinlab-bench-write-" + std::to_string(getpid());
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    uint64_t written = 0;
    for (auto _ : state) {
        if (written > (256u << 20)) {  // keep the file (and the page cache it takes) small
            state.PauseTiming();
            if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) state.SkipWithError("ftruncate");
            written = 0;
            state.ResumeTiming();
        }
        if (::write(fd, buf.data(), sizeof(TraceFrameHeader) + len) != ssize_t(sizeof(TraceFrameHeader) + len)) {
            state.SkipWithError("write");
            break;
        }
        written += sizeof(TraceFrameHeader) + len;
    }
    ::close(fd);
    ::unlink(file.c_str());
    state.counters["seconds_per_event"] = benchmark::Counter(double(state.iterations()) * per_buffer,
                                                        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetBytesProcessed(int64_t(state.iterations()) * (sizeof(TraceFrameHeader) + len));
}
BENCHMARK(BM_WriteFrame)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
}  // namespace spinlab::collect

int main(int argc, char** argv) {
    benchmark::AddCustomContext("trace_file_dir", spinlab::collect::bench_dir());
    benchmark::AddCustomContext("trace_file_fs", spinlab::collect::fs_name(spinlab::collect::bench_dir()));
    benchmark::AddCustomContext("crc32c", spinlab::crc32c_implementation());
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
