// locktrace/writer_benchmark.cc (target locktrace_benchmark): what writing a trace event costs,
// natively on the host with the writer the kernel runs, and how fast the host drains.
//
//   BM_SpinlockEvent: cycles per spinlock event written (lfence;rdtsc timestamp, payload filled
//     in place, begin/end write, buffer switches included). Circular mode, so it never loses.
//   BM_Drain: a producer thread writes spinlock events as fast as it can into a trace area in a
//     real shared-memory file (/dev/shm, mapped MAP_SHARED), the real drain (take_buffer) takes
//     buffers and this loop fwrites them to /dev/null: a memory-copy rate, not the collector's
//     TraceRecorder writing a trace file (collector/trace/trace_recorder_benchmark.cc measures that);
//     events/s and MB/s delivered, and events lost. Arg: the producer's
//     pause between events in ns (0: flat out) to find the rate at which loss starts.
//
// Counter cycles_per_event: TSC ticks per event, from rdtsc around batches. JSON:
//   locktrace_benchmark --benchmark_out=FILE --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../lockstat/clock.h"
#include "drain.h"
#include "trace_session.h"
#include "writer.h"
#include "bench_clock.h"

namespace spinlab::locktrace {
namespace {

using testing::thread_cpu_ns;
using testing::tsc_hz;

using lockstat::LfenceRdtsc;

constexpr int kBatch = 1000;

struct ShmArea {
    std::string path;
    int fd = -1;
    void* base = nullptr;
    uint64_t size = 0;
    ShmArea(uint32_t cpus, uint32_t buffer_size, uint32_t buffers, TraceLoggerMode mode) {
        path = "/dev/shm/spinlab-bench-trace-" + std::to_string(getpid());
        size = trace_area_needed(buffer_size, buffers, cpus);
        fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        unlink(path.c_str());  // nothing left behind, whatever happens next
        if (fd < 0 || ftruncate(fd, off_t(size)) != 0) std::abort();
        base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) std::abort();
        TraceSessionInformation p = default_session_params();
        p.buffer_size = buffer_size;
        p.minimum_buffers = p.maximum_buffers = buffers;
        p.logger_mode = uint32_t(mode);
        SessionPlan plan;
        if (!plan_session(p, size, cpus, &plan)) std::abort();
        area_start(base, size, cpus, p, plan, 1, LfenceRdtsc::now());
    }
    ~ShmArea() {
        munmap(base, size);
        close(fd);
    }
};

// The kernel's spinlock event, as spin_unlock writes it.
inline bool write_spinlock_event(Writer& w, uint64_t lock, uint64_t i) {
    constexpr uint32_t size = sizeof(TraceSpinlockEvent);
    auto* e = static_cast<TraceSpinlockEvent*>(begin_write(w, size));
    if (e == nullptr) return false;
    const uint64_t now = LfenceRdtsc::now();
    fill_header(e->h, size, TraceEventType::kSpinlock, w.cpu, 5, 1, now);
    e->lock_address = lock;
    e->call_site = 0x401000;
    e->acquire_tsc = now - 200;
    e->release_tsc = now;
    e->wait_cycles = i & 0xFF;
    e->spin_count = i & 7;
    e->holder_steal_ns = 0;
    e->waiter_steal_ns = 0;
    e->class_id = 3;
    e->holder_cpu_start = 1;
    e->holder_cpu_end = 1;
    e->lhp_class = 4;
    e->rules = kTraceRuleContention;
    e->flags = kTraceSpinContended;
    e->handovers = 0;
    end_write(w, size, now);
    return true;
}

void BM_SpinlockEvent(benchmark::State& state) {
    ShmArea a(1, 64 * 1024, 16, TraceLoggerMode::kCircular);
    Writer w;
    writer_arm(w, a.base, 0);
    uint64_t cycles = 0, events = 0, i = 0;
    const uint64_t cpu0 = thread_cpu_ns();
    for (auto _ : state) {
        const uint64_t t0 = LfenceRdtsc::now();
        for (int k = 0; k < kBatch; k++) write_spinlock_event(w, 0xffff800000100000ull, i++);
        cycles += LfenceRdtsc::now() - t0;
        events += kBatch;
    }
    // Wall TSC cycles include the time other processes ran on this core (a loaded machine);
    // the on-CPU figure counts only this thread's time, in TSC cycles.
    state.counters["cycles_per_event"] = double(cycles) / double(events);
    state.counters["cpu_cycles_per_event"] =
        double(thread_cpu_ns() - cpu0) * 1e-9 * tsc_hz() / double(events);
    state.SetItemsProcessed(int64_t(events));
    if (w.ctl->events_written != events || w.ctl->events_lost != 0)
        state.SkipWithError("events miscounted");
}
BENCHMARK(BM_SpinlockEvent)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_Drain(benchmark::State& state) {
    const uint64_t pause_ns = uint64_t(state.range(0));
    for (auto _ : state) {
        ShmArea a(1, 64 * 1024, 64, TraceLoggerMode::kRealTime);
        TraceAreaHeader h;
        if (area_parse(a.base, a.size, &h) != nullptr) std::abort();
        FILE* out = std::fopen("/dev/null", "wb");
        std::atomic<bool> stop{false};
        Writer w;
        writer_arm(w, a.base, 0);
        const auto t0 = std::chrono::steady_clock::now();
        std::thread producer([&] {
            uint64_t i = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                write_spinlock_event(w, 0x1000, i++);
                if (pause_ns) {
                    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(pause_ns);
                    while (std::chrono::steady_clock::now() < until) {}
                }
            }
            flush(w, kTraceBufferFinal);
        });
        std::vector<uint8_t> dst(h.session.buffer_size);
        uint64_t bytes = 0, delivered = 0;
        const auto until = t0 + std::chrono::milliseconds(500);
        bool stopping = false;
        for (;;) {
            uint32_t len;
            const TakeResult r = take_buffer(a.base, h, 0, dst.data(), &len);
            if (r == TakeResult::kTaken) {
                std::fwrite(dst.data(), 1, len, out);
                bytes += len;
                delivered += reinterpret_cast<const TraceBufferHeader*>(dst.data())->event_count;
                continue;
            }
            if (stopping) break;
            if (std::chrono::steady_clock::now() >= until) {
                stop = true;
                producer.join();
                stopping = true;
                continue;
            }
            std::this_thread::yield();
        }
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fclose(out);
        state.counters["events_per_s"] = double(delivered) / secs;
        state.counters["MB_per_s"] = double(bytes) / secs / 1e6;
        state.counters["events_lost"] = double(w.ctl->events_lost);
        state.counters["lost_share"] = double(w.ctl->events_lost) / double(w.ctl->events_attempted);
        if (delivered != w.ctl->events_written) state.SkipWithError("delivered != written");
    }
}
BENCHMARK(BM_Drain)->Arg(0)->Arg(50)->Arg(200)->Arg(1000)->Iterations(1)->Repetitions(3)
    ->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spinlab::locktrace

BENCHMARK_MAIN();
