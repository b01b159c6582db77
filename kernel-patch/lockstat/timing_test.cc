// lockstat/timing_test.cc: timing=all (timing.h) over every algorithm, with a scripted clock for
// exact numbers: every acquisition is stamped before its first try and once held, first-try wins
// land in the wait buckets and not in `uncontended`, and the counters' invariants hold as they are.
#include "timing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "instrumented_lock_fixture.h"
#include "instrumented_lock.h"

namespace spinlab::lockstat {
namespace {

using spinlock::Lock;

// HostEnv with the boot option: time_all() is what the kernel's Env reads from timing=.
struct TimedEnv : InstrumentedHostEnv<StepClock> {
    bool all = true;
    bool time_all() const { return all; }
};
static_assert(TimingEnv<TimedEnv>);
static_assert(!TimingEnv<InstrumentedHostEnv<StepClock>>, "an Env without time_all() times contended waits only");

using Cpu = HostCpu<TimedEnv>;

uint64_t lhp_total(const LockClassPerf& p) {
    uint64_t n = 0;
    for (uint64_t c : p.lhp_count) n += c;
    return n;
}

class TimingAllTest : public InstrumentedLockFixture<7> {
  protected:
    template <InstrumentLevel L>
    void uncontended_pairs(Cpu& c, int n) {
        for (int i = 0; i < n; i++) {
            lock_acquire<L>(lock_, &c.node, c.env);
            lock_release<L>(lock_, c.env);
        }
    }
};

TEST_P(TimingAllTest, FirstTryWinsAreTimedIntoTheBuckets) {
    Cpu c(0, GetParam(), &params_);
    uncontended_pairs<InstrumentLevel::kFull>(c, 2500);
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.acquisitions, 2500u);
    EXPECT_EQ(p.uncontended, 0u);        // timed: not the untimed first-try wins' row
    EXPECT_EQ(p.wait_hist[9], 2500u);    // before the try to held: one step, 1000 cycles
    EXPECT_EQ(p.wait_cycles_sum, 2500u * 1000);
    EXPECT_EQ(p.lhp_count[static_cast<int>(LhpClass::kUnknown)], 2500u);  // no holder seen
    EXPECT_TRUE(wait_invariant_holds(p));
    EXPECT_EQ(lhp_total(p), p.acquisitions - p.uncontended);
    // Every hold timed from the acquisition's end stamp, not every 1000th.
    EXPECT_EQ(p.holds_timed, 2500u);
    EXPECT_EQ(p.hold_hist[9], 2500u);
    EXPECT_EQ(StepClock::next, 1000000u + 3 * 2500 * 1000);  // start, end, release
}

TEST_P(TimingAllTest, CountersLevelTimesTheAcquisitionNotTheHold) {
    Cpu c(0, GetParam(), &params_);
    StepClock::step = 300;  // 300 cycles: bucket 8, the original's peak
    uncontended_pairs<InstrumentLevel::kCounters>(c, 100);
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.wait_hist[8], 100u);
    EXPECT_EQ(p.uncontended, 0u);
    EXPECT_EQ(p.holds_timed, 0u);
    EXPECT_EQ(StepClock::next, 1000000u + 2 * 100 * 300);
}

TEST_P(TimingAllTest, OffCompilesItAway) {
    Cpu c(0, GetParam(), &params_);
    uncontended_pairs<InstrumentLevel::kOff>(c, 100);
    EXPECT_EQ(c.perf->classes[kClass].acquisitions, 0u);
    EXPECT_EQ(StepClock::next, 1000000u);  // never read the clock
}

TEST_P(TimingAllTest, ContendedOnlyWhenTheOptionIsOff) {
    Cpu c(0, GetParam(), &params_);
    c.env.all = false;
    uncontended_pairs<InstrumentLevel::kCounters>(c, 100);
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.uncontended, 100u);
    EXPECT_EQ(wait_hist_total(p), 0u);
    EXPECT_EQ(StepClock::next, 1000000u);
}

// A contended acquisition's wait starts at the stamp before its first try.
TEST_P(TimingAllTest, AContendedWaitStartsBeforeTheFirstTry) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    lock_acquire<InstrumentLevel::kFull>(lock_, &holder.node, holder.env);
    std::thread t([&] {
        StepClock::next = 5000000;
        StepClock::step = 3000;
        lock_acquire<InstrumentLevel::kFull>(lock_, &waiter.node, waiter.env);
        lock_release<InstrumentLevel::kFull>(lock_, waiter.env);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock_release<InstrumentLevel::kFull>(lock_, holder.env);
    t.join();
    const LockClassPerf& p = waiter.perf->classes[kClass];
    EXPECT_EQ(p.acquisitions, 1u);
    EXPECT_EQ(p.wait_hist[11], 1u);  // one step between the two stamps: 3000 cycles
    EXPECT_EQ(p.wait_cycles_max, 3000u);
    EXPECT_EQ(p.uncontended, 0u);
    EXPECT_TRUE(wait_invariant_holds(p));
    EXPECT_EQ(p.holds_timed, 1u);
}

TEST_P(TimingAllTest, ClockGoingBackwardsIsOverflow) {
    Cpu c(0, GetParam(), &params_);
    StepClock::step = -1000;
    uncontended_pairs<InstrumentLevel::kFull>(c, 3);
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.wait_overflow, 3u);
    EXPECT_EQ(wait_hist_total(p), 0u);
    EXPECT_TRUE(wait_invariant_holds(p));
    EXPECT_EQ(p.hold_overflow, 3u);
}

INSTANTIATE_TEST_SUITE_P(All, TimingAllTest,
                         ::testing::Values(LockAlgorithm::kTestAndSet, LockAlgorithm::kTicket,
                                           LockAlgorithm::kQueued, LockAlgorithm::kParavirt,
                                           LockAlgorithm::kPreemptableTicket,
                                           LockAlgorithm::kParavirtQueued, LockAlgorithm::kStudent),
                         [](const auto& info) { return lock_algorithm_name(info.param); });

}  // namespace
}  // namespace spinlab::lockstat
