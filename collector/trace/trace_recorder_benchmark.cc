// collector/trace/trace_recorder_benchmark.cc (target trace_recorder_benchmark): how fast the
// collector's TraceRecorder moves spinlock events from the shared region into a trace file on
// disk, what host CPU that costs per event, and at which event rate a real-time session starts
// to lose events. This is the path of `spinlab-collect trace record`, not a copy loop.
//
//   BM_RecordToFile/<pause ns>: a region file in /dev/shm laid out as the guest lays out its own
//     (region_layout, then area_start with the default session: 64 KiB buffers, up to 64 per
//     CPU, real-time). One producer thread plays a guest CPU: it writes spinlock events through
//     the kernel's release path (trace_spinlock_release: the sampling rules, begin_write, the
//     104-byte event, end_write), pausing <pause ns> between events (0: flat out). The consumer
//     is the real TraceRecorder writing a real file (in $SPINLAB_BENCH_DIR, default /var/tmp),
//     driven as `trace record` drives it: drain() until nothing is published, then 5 ms of
//     sleep. After 0.5 s the producer flushes its last buffer and stops, finish() writes what
//     is left and the counters frame (the wall time runs until then), and the file is checked: its size is what the recorder says it wrote and the
//     events in it are the ones the writer counts as written. The file is removed afterwards.
//
// Counters (per repetition; quote the medians): events_per_s and MB_per_s into the file (over
// the wall time), events_lost and lost_share (the writer's EventsLost), recorder_ns_per_event
// (the recorder thread's CPU time per event recorded). The context names the file system the
// file was on.
//   trace_recorder_benchmark --benchmark_out=FILE --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "channel/region_header.h"
#include "lockstat/clock.h"
#include "lockstat/params.h"
#include "locktrace/spinlock_event.h"
#include "locktrace/trace_session.h"
#include "locktrace/writer.h"
#include "trace_recorder.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;
using lockstat::LfenceRdtsc;

constexpr auto kRecordFor = std::chrono::milliseconds(500);
constexpr auto kRecordPoll = std::chrono::milliseconds(5);  // trace record's sleep between drains

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

private:
    std::string path_;
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    void* area_ = nullptr;
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
    // Writes events for `duration`, then flushes its last buffer and sets `done`.
    void run(std::chrono::steady_clock::duration duration, uint64_t pause_ns, std::atomic<bool>& done) {
        const auto end = std::chrono::steady_clock::now() + duration;
        for (uint64_t i = 0; (i & 1023) != 0 || std::chrono::steady_clock::now() < end; i++) {
            const uint64_t now = LfenceRdtsc::now();
            lock_.trace.acquire_tsc = now - 200;
            lock_.trace.wait_cycles = 100;
            lt::trace_spinlock_release(ctx_, lock_, now);
            if (pause_ns) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(pause_ns);
                while (std::chrono::steady_clock::now() < until) {}
            }
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

uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

void BM_RecordToFile(benchmark::State& state) {
    const uint64_t pause_ns = uint64_t(state.range(0));
    const std::string file = bench_dir() + "/spinlab-bench-" + std::to_string(getpid()) + ".trace";
    for (auto _ : state) {
        ShmRegion region;
        Producer cpu(region.area());
        TraceRecorder rec(region.path(), file);
        std::atomic<bool> done{false};
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t cpu0 = thread_cpu_ns();
        std::thread producer([&] { cpu.run(kRecordFor, pause_ns, done); });
        // The producer stops itself after kRecordFor; drain() returns after one round of slots,
        // as in `trace record`'s loop.
        while (!done.load())
            if (!rec.drain()) std::this_thread::sleep_for(kRecordPoll);
        producer.join();
        rec.finish();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const TraceCpuControl& k = cpu.counters();
        state.counters["events_per_s"] = double(rec.events()) / secs;
        state.counters["MB_per_s"] = double(std::filesystem::file_size(file)) / secs / 1e6;
        state.counters["events_lost"] = double(k.events_lost);
        state.counters["lost_share"] = double(k.events_lost) / double(k.events_attempted);
        state.counters["recorder_ns_per_event"] = double(thread_cpu_ns() - cpu0) / double(rec.events());
        if (rec.events() != k.events_written) state.SkipWithError("events in the file != events written");
        if (std::filesystem::file_size(file) != file_bytes(rec)) state.SkipWithError("the file's size is not what was recorded");
        std::filesystem::remove(file);
    }
}
BENCHMARK(BM_RecordToFile)->Arg(0)->Arg(50)->Arg(200)->Arg(1000)->Iterations(1)->Repetitions(3)
    ->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spinlab::collect

int main(int argc, char** argv) {
    benchmark::AddCustomContext("trace_file_dir", spinlab::collect::bench_dir());
    benchmark::AddCustomContext("trace_file_fs", spinlab::collect::fs_name(spinlab::collect::bench_dir()));
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
