// lockstat/instrumented_lock_fixture.h: what the host tests of the instrumented lock share
// (instrumented_lock_test.cc, timing_test.cc): a scripted clock, a host thread playing a CPU, and
// a test fixture run over every lock algorithm with one lock of its own class. GoogleTest, host
// only.
#pragma once

#include <gtest/gtest.h>
#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

#include <memory>

#include "instrumented_host_env.h"
#include "instrumented_lock.h"
#include "params.h"
#include "perf_record.h"

namespace spinlab::lockstat {

// A clock that advances by `step` per read, per thread: a contended wait then measures
// exactly one step, a hold stamped at the wait's end exactly one more. The fixture below starts
// every test at next = 1000000, step = 1000.
struct StepClock {
    static inline thread_local uint64_t next = 1000000;
    static inline thread_local int64_t step = 1000;
    static uint64_t now() {
        const uint64_t v = next;
        next += static_cast<uint64_t>(step);
        return v;
    }
};

// One host thread playing CPU `id`: its counters, its Env (an InstrumentedHostEnv) and its MCS
// node.
template <class Env>
struct HostCpu {
    std::unique_ptr<CpuPerfData> perf = std::make_unique<CpuPerfData>();
    Env env;
    spinlock::McsNode node{};
    HostCpu(uint32_t id, LockAlgorithm algo, SpinlockParams* params) {
        init_cpu_perf(*perf, id, params->acquire_sample_rate);
        env.algo = algo;
        env.cpu_id = id;
        env.yield_every = 64;
        env.perf_data = perf.get();
        env.live_params = params;
    }
};

// A test over each LockAlgorithm (GetParam()): lock_, of class kClass, under the default
// parameters, and the clock reset.
template <uint32_t Class>
class InstrumentedLockFixture : public ::testing::TestWithParam<LockAlgorithm> {
  protected:
    static constexpr uint32_t kClass = Class;
    void SetUp() override {
        StepClock::next = 1000000;
        StepClock::step = 1000;
        spinlock::lock_init(lock_, "test", kClass);
    }
    SpinlockParams params_ = kDefaultSpinlockParams;
    spinlock::Lock lock_;
};

}  // namespace spinlab::lockstat
