// How fast trace text becomes events: the timeline must keep up with sched_switch on busy
// hosts (tens of thousands of switches per second per traced thread under a hog).
#include <benchmark/benchmark.h>

#include <string>

#include "run_intervals.h"
#include "sched_switch_parse.h"

namespace spinlab::load {
namespace {

std::string trace_text(int lines) {
    std::string text;
    for (int i = 0; i < lines; ++i) {
        uint64_t ts = 1000000000ull + static_cast<uint64_t>(i) * 5000;
        bool out = i % 2 == 0;
        text += "       CPU 0/TCG-4242    [001] d..2. " + std::to_string(ts) +
                ": sched_switch: prev_comm=" + (out ? "CPU 0/TCG prev_pid=4242" : "cc1plus prev_pid=77") +
                " prev_prio=120 prev_state=R+ ==> next_comm=" + (out ? "cc1plus next_pid=77" : "CPU 0/TCG next_pid=4242") +
                " next_prio=120\n";
    }
    return text;
}

void BM_ParseTrace(benchmark::State& state) {
    const std::string text = trace_text(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        SchedSwitchParser p;
        p.feed(text);
        p.finish();
        benchmark::DoNotOptimize(p.events().data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseTrace)->Arg(1000)->Arg(100000);

void BM_BuildIntervals(benchmark::State& state) {
    SchedSwitchParser p;
    p.feed(trace_text(static_cast<int>(state.range(0))));
    for (auto _ : state) {
        auto r = build_run_intervals(p.events(), {{4242, 0, std::nullopt}}, 0, UINT64_MAX);
        benchmark::DoNotOptimize(r.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BuildIntervals)->Arg(100000);

}  // namespace
}  // namespace spinlab::load

BENCHMARK_MAIN();
