// locktrace/stack_benchmark.cc (target stack_benchmark): what a call stack on a trace event
// costs, natively on the host with the code the kernel runs.
//
//   BM_Walk/D: cycles per frame-pointer walk of a chain D frames deep (8, 16, 32), reads through
//     the kernel's plain bounded load (kern/locktrace_stacks.cc's read_kernel).
//   BM_StackEvent/D/C: cycles per event stack written at depth D: C=1 through the stack cache (a
//     hit: the reference only, the common case), C=0 inline (the frames in the event). Counter
//     bytes_per_stack: trace bytes each writes.
//
// Counters cycles (TSC ticks per operation, wall) and cpu_cycles (on-CPU time in TSC ticks, which
// other processes on a loaded machine do not inflate). JSON:
//   stack_benchmark --benchmark_out=FILE --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include "../lockstat/clock.h"
#include "../stackwalk/frame_walk.h"
#include "stack_events.h"
#include "test_area.h"
#include "bench_clock.h"

namespace spinlab::locktrace {
namespace {

using testing::thread_cpu_ns;
using testing::tsc_hz;

using lockstat::LfenceRdtsc;
namespace sw = stackwalk;
constexpr int kBatch = 1000;

bool read_plain(void*, uint64_t addr, uint64_t* out) {
    *out = *reinterpret_cast<const volatile uint64_t*>(addr);
    return true;
}

// A stack of `depth` frames laid out as -fno-omit-frame-pointer code leaves them: each frame
// [saved rbp, return address], the outermost with a zero saved rbp.
struct FakeStack {
    std::vector<uint64_t> words;
    uint64_t rbp;
    explicit FakeStack(uint32_t depth) : words(4 * depth + 8, 0) {
        const uint64_t base = uint64_t(words.data());
        uint64_t next = 0;
        for (uint32_t i = depth - 1; i-- > 0;) {  // frames 1..depth-1, outermost last in memory
            const uint64_t at = base + 8 * (4 * i + 2);
            words[4 * i + 2] = next;
            words[4 * i + 3] = 0x100000 + 0x40 * i + 5;  // return address
            next = at;
        }
        rbp = next;
    }
    sw::StackBounds bounds() const {
        return {uint64_t(words.data()), uint64_t(words.data() + words.size())};
    }
};

void report(benchmark::State& state, uint64_t cycles, uint64_t ops, uint64_t cpu0) {
    state.counters["cycles"] = double(cycles) / double(ops);
    state.counters["cpu_cycles"] = double(thread_cpu_ns() - cpu0) * 1e-9 * tsc_hz() / double(ops);
    state.SetItemsProcessed(int64_t(ops));
}

void BM_Walk(benchmark::State& state) {
    const uint32_t depth = uint32_t(state.range(0));
    FakeStack s(depth);
    uint64_t frames[sw::kMaxStackDepth];
    uint64_t cycles = 0, ops = 0;
    const uint64_t cpu0 = thread_cpu_ns();
    for (auto _ : state) {
        const uint64_t t0 = LfenceRdtsc::now();
        for (int k = 0; k < kBatch; k++) {
            const sw::WalkResult r = sw::walk_frames(0x1000, s.rbp, s.bounds(), read_plain, nullptr, frames, 256);
            benchmark::DoNotOptimize(r);
            if (r.depth != depth) state.SkipWithError("walk depth differs");
        }
        cycles += LfenceRdtsc::now() - t0;
        ops += kBatch;
    }
    report(state, cycles, ops, cpu0);
}
BENCHMARK(BM_Walk)->Arg(8)->Arg(16)->Arg(32)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_StackEvent(benchmark::State& state) {
    const uint32_t depth = uint32_t(state.range(0));
    const bool cached = state.range(1) != 0;
    testing::TestArea a = testing::make_area(1, 64 * 1024, 16, TraceLoggerMode::kCircular);
    Writer w;
    writer_arm(w, a.area(), 0);
    std::vector<uint64_t> memory(sw::stack_cache_bytes(256, 1 << 20) / 8 + 1);
    sw::StackCache cache;
    cache.init(memory.data(), 256, 1 << 20, 0);
    uint64_t scratch[kTraceMaxStackFrames];
    std::vector<uint64_t> frames(depth);
    for (uint32_t i = 0; i < depth; i++) frames[i] = 0x100000 + 0x40 * i;
    const StackEventContext c{&w, cached ? &cache : nullptr, scratch, 0, 1, 2};
    const StackSample sample{frames.data(), depth, 0, uint8_t(TraceStackEnd::kNone)};
    write_event_stack(c, sample, 1, 1);  // the definition, once
    const uint64_t bytes0 = w.ctl->bytes_written + w.used;
    uint64_t cycles = 0, ops = 0;
    const uint64_t cpu0 = thread_cpu_ns();
    uint64_t before = w.ctl->events_written;
    for (auto _ : state) {
        const uint64_t t0 = LfenceRdtsc::now();
        for (int k = 0; k < kBatch; k++) write_event_stack(c, sample, 1, uint64_t(k));
        cycles += LfenceRdtsc::now() - t0;
        ops += kBatch;
    }
    report(state, cycles, ops, cpu0);
    (void)bytes0;
    state.counters["bytes_per_stack"] = cached ? stack_reference_bytes() : stack_walk_bytes(depth);
    if (w.ctl->events_written - before != ops) state.SkipWithError("one event per stack expected");
}
BENCHMARK(BM_StackEvent)
    ->ArgsProduct({{8, 16, 32}, {0, 1}})
    ->ArgNames({"depth", "cached"})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace
}  // namespace spinlab::locktrace

BENCHMARK_MAIN();
