// collector_benchmark: time to snapshot every counter of 8 vCPUs through the shared region
// (a host-side copy, no guest involvement) vs through the control channel (a perf-data query
// answered by the guest's channel server and sysinfo handler), against the fake guest.
// The fake guest's workers run briefly and stop, so the numbers measure the collector and the
// server, not two host cores fighting spinning workers.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <thread>

#include "fake_guest.h"
#include "session.h"

namespace spinlab::collect {
namespace {

constexpr uint32_t kCpus = 8;

struct Fixture {
    std::string dir;
    std::unique_ptr<testing::FakeGuest> guest;
    Config region_cfg, channel_cfg;

    Fixture() {
        char tmpl[] = "/tmp/spinlab-collect-bench.XXXXXX";
        dir = ::mkdtemp(tmpl);
        testing::FakeGuestOptions o;
        o.socket_path = dir + "/control.sock";
        o.shm_path = dir + "/shm";
        o.cpus = kCpus;
        o.locks = 8;
        o.run_ms = 200;
        guest = std::make_unique<testing::FakeGuest>(o);
        guest->wait_quiescent();
        region_cfg.attach.shm = o.shm_path;
        region_cfg.source = "region";
        channel_cfg.attach.socket = o.socket_path;
        channel_cfg.source = "channel";
    }
    ~Fixture() {
        guest.reset();
        ::rmdir(dir.c_str());
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

void BM_SnapshotThroughRegion(benchmark::State& state) {
    Session s(fixture().region_cfg);
    uint64_t acq = 0;
    for (auto _ : state) {
        Snapshot snap = s.snapshot();
        acq = snap.cpus[kCpus - 1].classes[0].acquisitions;
        benchmark::DoNotOptimize(acq);
    }
    state.counters["cpus"] = kCpus;
    state.counters["bytes"] = double(kCpus) * sizeof(LockClassPerf) * kMaxLockClasses;
}
BENCHMARK(BM_SnapshotThroughRegion)->Unit(benchmark::kMicrosecond);

void BM_SnapshotThroughChannel(benchmark::State& state) {
    Session s(fixture().channel_cfg);
    uint64_t acq = 0;
    for (auto _ : state) {
        Snapshot snap = s.snapshot();
        acq = snap.cpus.size() == kCpus ? snap.cpus[kCpus - 1].classes[0].acquisitions : 0;
        benchmark::DoNotOptimize(acq);
    }
    if (acq == 0) state.SkipWithError("the channel snapshot came back without CPU 7's counters");
    state.counters["cpus"] = kCpus;
}
BENCHMARK(BM_SnapshotThroughChannel)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace spinlab::collect

BENCHMARK_MAIN();
