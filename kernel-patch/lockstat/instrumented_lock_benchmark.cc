// lockstat/instrumented_lock_benchmark.cc (target spinlock_benchmark): what the
// instrumentation costs an uncontended acquire+release, natively on the host, with the lock
// code the kernel runs. Every algorithm x {off (plain), counters, full}; plus the three clocks
// on their own, and full instrumentation with every hold timed, per clock, to show what a
// stamp costs (the original experiment's cpuid;rdtsc included).
//
// Counter cycles_per_op: TSC ticks per acquire+release pair (or per clock read), from rdtsc
// around batches of kBatch operations. The TSC runs at the nominal frequency, not the core's
// current one. Run with --benchmark_repetitions (default here: 5) and read the medians:
//   spinlock_benchmark --benchmark_out=build/bench/spinlock.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "clock.h"
#include "instrumented_host_env.h"
#include "instrumented_lock.h"

namespace spinlab::lockstat {
namespace {

constexpr int kBatch = 1000;
constexpr int kRepetitions = 5;

inline uint64_t tsc() {
    return LfenceRdtsc::now();
}

template <InstrumentLevel L, LockAlgorithm A, class Clock = LfenceRdtsc>
void BM_UncontendedPair(benchmark::State& state, uint32_t sample_rate) {
    auto perf = std::make_unique<CpuPerfData>();
    SpinlockParams params = kDefaultSpinlockParams;
    params.acquire_sample_rate = sample_rate;  // the benchmark may go below the minimum
    init_cpu_perf(*perf, 0, sample_rate);
    InstrumentedHostEnv<Clock> env;
    env.algo = A;
    env.perf_data = perf.get();
    env.live_params = &params;
    spinlock::Lock l;
    spinlock::lock_init(l, "bench", 1);
    spinlock::McsNode node{};
    uint64_t cycles = 0, ops = 0;
    for (auto _ : state) {
        const uint64_t t0 = tsc();
        for (int i = 0; i < kBatch; i++) {
            lock_acquire<L>(l, &node, env);
            lock_release<L>(l, env);
        }
        cycles += tsc() - t0;
        ops += kBatch;
    }
    state.counters["cycles_per_op"] = static_cast<double>(cycles) / static_cast<double>(ops);
    state.SetItemsProcessed(static_cast<int64_t>(ops));
    // Keep the bookkeeping honest: every pair was counted (or none, when off).
    const uint64_t want = L == InstrumentLevel::kOff ? 0 : ops;
    if (perf->classes[1].acquisitions != want) state.SkipWithError("acquisitions miscounted");
}

template <class Clock>
void BM_ClockRead(benchmark::State& state) {
    uint64_t cycles = 0, ops = 0, sink = 0;
    for (auto _ : state) {
        const uint64_t t0 = tsc();
        for (int i = 0; i < kBatch; i++) sink += Clock::now();
        cycles += tsc() - t0;
        ops += kBatch;
    }
    benchmark::DoNotOptimize(sink);
    state.counters["cycles_per_op"] = static_cast<double>(cycles) / static_cast<double>(ops);
}

template <InstrumentLevel L, LockAlgorithm A, class Clock = LfenceRdtsc>
void register_pair(const char* clock_name, uint32_t sample_rate) {
    std::string name =
        std::string("uncontended_pair/") + lock_algorithm_name(A) + "/" + instrument_level_name(L);
    if (sample_rate != kMinAcquireSampleRate) name += std::string("/every_hold/") + clock_name;
    benchmark::RegisterBenchmark(name.c_str(),
                                 [sample_rate](benchmark::State& state) {
                                     BM_UncontendedPair<L, A, Clock>(state, sample_rate);
                                 })
        ->Repetitions(kRepetitions)
        ->ReportAggregatesOnly(true);
}

template <LockAlgorithm A>
void register_all_levels() {
    register_pair<InstrumentLevel::kOff, A>("lfence", kMinAcquireSampleRate);
    register_pair<InstrumentLevel::kCounters, A>("lfence", kMinAcquireSampleRate);
    register_pair<InstrumentLevel::kFull, A>("lfence", kMinAcquireSampleRate);
}

template <class Clock>
void register_clock(const char* name) {
    benchmark::RegisterBenchmark((std::string("clock_read/") + name).c_str(), BM_ClockRead<Clock>)
        ->Repetitions(kRepetitions)
        ->ReportAggregatesOnly(true);
}

void register_all() {
    register_all_levels<LockAlgorithm::kTestAndSet>();
    register_all_levels<LockAlgorithm::kTicket>();
    register_all_levels<LockAlgorithm::kQueued>();
    register_all_levels<LockAlgorithm::kParavirt>();
    // Every hold timed (sample rate 1): two stamps per pair, so the clock's cost shows.
    register_pair<InstrumentLevel::kFull, LockAlgorithm::kTestAndSet, LfenceRdtsc>("lfence", 1);
    register_pair<InstrumentLevel::kFull, LockAlgorithm::kTestAndSet, Rdtscp>("rdtscp", 1);
    register_pair<InstrumentLevel::kFull, LockAlgorithm::kTestAndSet, CpuidRdtsc>("cpuid", 1);
    register_clock<LfenceRdtsc>("lfence");
    register_clock<Rdtscp>("rdtscp");
    register_clock<CpuidRdtsc>("cpuid");
}

}  // namespace
}  // namespace spinlab::lockstat

int main(int argc, char** argv) {
    spinlab::lockstat::register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
