// lockstat/instrumented_lock_test.cc: the instrumentation layer over every algorithm, with a
// scripted clock for exact numbers and the real one for the multi-threaded invariant.
#include "instrumented_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "instrumented_lock_fixture.h"

namespace spinlab::lockstat {
namespace {

using spinlock::Lock;
using spinlock::McsNode;

using Env = InstrumentedHostEnv<StepClock>;
using Cpu = HostCpu<Env>;

class InstrumentedLockTest : public InstrumentedLockFixture<5> {
  protected:
    // `waiter` acquires while `holder` holds the lock; the holder lets go after 20 ms.
    template <InstrumentLevel L>
    void contended_acquire(Cpu& holder, Cpu& waiter, int64_t waiter_step) {
        lock_acquire<L>(lock_, &holder.node, holder.env);
        std::thread t([&] {
            StepClock::next = 5000000;
            StepClock::step = waiter_step;
            lock_acquire<L>(lock_, &waiter.node, waiter.env);
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        lock_release<L>(lock_, holder.env);
        t.join();
    }
};

TEST_P(InstrumentedLockTest, OffRecordsNothing) {
    Cpu c(0, GetParam(), &params_);
    for (int i = 0; i < 2000; i++) {
        lock_acquire<InstrumentLevel::kOff>(lock_, &c.node, c.env);
        lock_release<InstrumentLevel::kOff>(lock_, c.env);
    }
    EXPECT_EQ(c.perf->classes[kClass].acquisitions, 0u);
    EXPECT_EQ(StepClock::next, 1000000u);  // and never read the clock
}

TEST_P(InstrumentedLockTest, UncontendedCountsWithoutReadingTheClock) {
    Cpu c(0, GetParam(), &params_);
    for (int i = 0; i < 2500; i++) {
        lock_acquire<InstrumentLevel::kCounters>(lock_, &c.node, c.env);
        lock_release<InstrumentLevel::kCounters>(lock_, c.env);
    }
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.acquisitions, 2500u);
    EXPECT_EQ(p.uncontended, 2500u);
    EXPECT_EQ(p.holds_timed, 0u);
    EXPECT_EQ(StepClock::next, 1000000u);
    EXPECT_EQ(c.perf->classes[0].acquisitions, 0u);  // only the lock's own class
}

TEST_P(InstrumentedLockTest, FullTimesEveryRateThUncontendedHold) {
    Cpu c(0, GetParam(), &params_);
    for (int i = 0; i < 2500; i++) {
        lock_acquire<InstrumentLevel::kFull>(lock_, &c.node, c.env);
        lock_release<InstrumentLevel::kFull>(lock_, c.env);
    }
    const LockClassPerf& p = c.perf->classes[kClass];
    EXPECT_EQ(p.uncontended, 2500u);
    EXPECT_EQ(p.holds_timed, 2u);   // the 1000th and the 2000th
    EXPECT_EQ(p.hold_hist[9], 2u);  // each hold: one clock step = 1000 cycles
    EXPECT_EQ(p.hold_cycles_sum, 2000u);
    EXPECT_EQ(StepClock::next, 1000000u + 4 * 1000);  // 2 stamps per sampled hold, no more
}

TEST_P(InstrumentedLockTest, ContendedWaitIsMeasuredAndItsHoldTimed) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    contended_acquire<InstrumentLevel::kFull>(holder, waiter, 1000);
    const LockClassPerf& p = waiter.perf->classes[kClass];
    EXPECT_EQ(p.acquisitions, 1u);
    EXPECT_EQ(p.uncontended, 0u);
    EXPECT_EQ(p.wait_hist[9], 1u);  // 1000 cycles: bucket 9
    EXPECT_EQ(p.wait_cycles_max, 1000u);
    EXPECT_EQ(p.lhp_count[static_cast<int>(LhpClass::kUnknown)], 1u);  // no steal time here
    EXPECT_TRUE(wait_invariant_holds(p));
    // The hold starts at the wait's end stamp; the release stamps once more.
    std::thread t([&] {
        StepClock::next = 5002000;
        lock_release<InstrumentLevel::kFull>(lock_, waiter.env);
    });
    t.join();
    EXPECT_EQ(p.holds_timed, 1u);
    EXPECT_EQ(p.hold_cycles_sum, 1000u);
}

void no_trace(void*, const Lock&, uint64_t) {}
std::atomic<int> g_waiter_seen{0};  // steal samples the waiter took (its WaitTracer's, after the count)
StealSample seen_steal(uint32_t) {
    g_waiter_seen++;
    return StealSample{0, 0, 0};
}

// The waiter waits behind the holder (on a thread of its own); `during` runs once its wait has
// begun (its WaitTracer has read the lock's count), then the holder lets go and the waiter wins.
template <class During>
void wait_behind(Lock& l, Cpu& holder, Cpu& waiter, During during) {
    constexpr auto kFull = InstrumentLevel::kFull;
    lock_acquire<kFull>(l, &holder.node, holder.env);
    g_waiter_seen = 0;
    waiter.env.steal_fn = seen_steal;
    std::thread t([&] { lock_acquire<kFull>(l, &waiter.node, waiter.env); });
    while (g_waiter_seen.load() == 0) std::this_thread::yield();
    during();
    lock_release<kFull>(l, holder.env);
    t.join();
}

// The lock's own count of the holds begun during a wait (Lock::hold_seq, HoldTrace::handovers):
// none when the holder seen at the start lets go to the waiter; exactly the holds begun in
// between otherwise, whatever the clock says.
TEST_P(InstrumentedLockTest, HoldsBegunDuringAWaitAreCounted) {
    constexpr auto kFull = InstrumentLevel::kFull;
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    waiter.env.trace_fn = no_trace;
    contended_acquire<kFull>(holder, waiter, 1000);
    EXPECT_EQ(lock_.trace.handovers_known, 1);
    EXPECT_EQ(lock_.trace.handovers, 0);
    EXPECT_EQ(lock_.trace.holder_cpu_start, 0u);
    EXPECT_EQ(lock_.trace.holder_cpu_end, 0u);
    EXPECT_EQ(lock_.hold_seq, 2u);  // the holder's and the waiter's
    lock_release<kFull>(lock_, waiter.env);

    // Three holds begin while the waiter waits (other CPUs' wins bump the count).
    wait_behind(lock_, holder, waiter, [&] { lock_.hold_seq += 3; });
    EXPECT_EQ(lock_.trace.handovers, 3);
    lock_release<kFull>(lock_, waiter.env);
}

// The waiter's CPU took no lock of the class while it waited (its own count of the class's
// acquisitions did not move), and says so; where that CPU did (another thread there, an
// interrupt handler), it does not.
TEST_P(InstrumentedLockTest, AWaitSaysWhetherItsOwnCpuTookALockOfItsClass) {
    constexpr auto kFull = InstrumentLevel::kFull;
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    waiter.env.trace_fn = no_trace;
    contended_acquire<kFull>(holder, waiter, 1000);
    EXPECT_EQ(lock_.trace.waiter_cpu_took_none, 1);
    lock_release<kFull>(lock_, waiter.env);

    // a lock of the class, taken on the waiter's CPU while it waits
    wait_behind(lock_, holder, waiter, [&] { waiter.perf->classes[kClass].acquisitions++; });
    EXPECT_EQ(lock_.trace.waiter_cpu_took_none, 0);
    EXPECT_EQ(lock_.trace.handovers_known, 1);
    lock_release<kFull>(lock_, waiter.env);
}

TEST_P(InstrumentedLockTest, CountersLevelMeasuresTheWaitButNotTheHold) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    contended_acquire<InstrumentLevel::kCounters>(holder, waiter, 3000);
    const LockClassPerf& p = waiter.perf->classes[kClass];
    EXPECT_EQ(p.wait_hist[11], 1u);  // 3000 cycles: 2^11 <= 3000 < 2^12
    EXPECT_EQ(lock_.hold_timed, 0u);
    lock_release<InstrumentLevel::kCounters>(lock_, waiter.env);
    EXPECT_EQ(p.holds_timed, 0u);
}

TEST_P(InstrumentedLockTest, ClockGoingBackwardsIsOverflow) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    contended_acquire<InstrumentLevel::kFull>(holder, waiter, -1000);
    const LockClassPerf& p = waiter.perf->classes[kClass];
    EXPECT_EQ(p.acquisitions, 1u);
    EXPECT_EQ(p.wait_overflow, 1u);
    EXPECT_EQ(wait_hist_total(p), 0u);
    EXPECT_TRUE(wait_invariant_holds(p));
    lock_release<InstrumentLevel::kFull>(lock_, waiter.env);
}

// Steal time scripted per CPU: the waiter (CPU 1) loses 1 ms at every read, the holder (CPU 0)
// none, so a wait whose holder is known is classed waiter-preempted.
StealSample scripted_steal(uint32_t cpu) {
    static std::atomic<uint64_t> waiter_ns{0};
    return {cpu == 1 ? waiter_ns.fetch_add(1000000) : 0, 0, 1};
}

TEST_P(InstrumentedLockTest, StealTimeClassesAWaitWhoseHolderIsKnown) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    holder.env.steal_fn = waiter.env.steal_fn = scripted_steal;
    contended_acquire<InstrumentLevel::kFull>(holder, waiter, 1000);
    EXPECT_EQ(waiter.perf->classes[kClass].lhp_count[static_cast<int>(LhpClass::kWaiterPreempted)], 1u);
    lock_release<InstrumentLevel::kFull>(lock_, waiter.env);
}

// A waiter that saw no holder when its wait began cannot say the holder ran: the class is
// unknown, not "waiter-preempted" (which said the holder was not preempted).
TEST_P(InstrumentedLockTest, AWaitWithNoHolderSeenAtItsStartIsUnknown) {
    Cpu holder(0, GetParam(), &params_), waiter(1, GetParam(), &params_);
    holder.env.steal_fn = waiter.env.steal_fn = scripted_steal;
    lock_acquire<InstrumentLevel::kFull>(lock_, &holder.node, holder.env);
    lock_.holder_cpu = kNoCpu;  // as if read between two holders
    std::thread t([&] {
        StepClock::next = 5000000;
        lock_acquire<InstrumentLevel::kFull>(lock_, &waiter.node, waiter.env);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock_release<InstrumentLevel::kFull>(lock_, holder.env);
    t.join();
    const LockClassPerf& p = waiter.perf->classes[kClass];
    EXPECT_EQ(p.lhp_count[static_cast<int>(LhpClass::kUnknown)], 1u);
    EXPECT_EQ(p.lhp_count[static_cast<int>(LhpClass::kWaiterPreempted)], 0u);
    lock_release<InstrumentLevel::kFull>(lock_, waiter.env);
}

// The invariant and mutual exclusion under contention from several threads, every
// algorithm, both recording levels, with the real clock. Each thread runs kIters pairs, and
// goes on (up to a deadline) until some thread has contended: on a loaded 2-core host the
// threads may otherwise run one after another and test nothing.
template <InstrumentLevel L>
void stress(LockAlgorithm algo) {
    constexpr uint32_t kThreads = 4;
    constexpr uint64_t kIters = 20000;
    SpinlockParams params = kDefaultSpinlockParams;
    Lock lock;
    spinlock::lock_init(lock, "stress", 2);
    uint64_t counter = 0;
    std::atomic<uint32_t> ready{0};
    std::atomic<bool> someone_contended{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<uint64_t> done(kThreads, 0);
    std::vector<std::unique_ptr<Cpu>> cpus;
    for (uint32_t i = 0; i < kThreads; i++) cpus.push_back(std::make_unique<Cpu>(i, algo, &params));
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < kThreads; i++) {
        threads.emplace_back([&, i] {
            InstrumentedHostEnv<LfenceRdtsc> env;
            env.algo = algo;
            env.cpu_id = i;
            env.yield_every = 64;
            env.perf_data = cpus[i]->perf.get();
            env.live_params = &params;
            const LockClassPerf& mine = cpus[i]->perf->classes[2];
            McsNode node{};
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();
            uint64_t n = 0;
            for (; n < kIters || (!someone_contended.load(std::memory_order_relaxed) &&
                                  (n % 1024 || std::chrono::steady_clock::now() < deadline));
                 n++) {
                lock_acquire<L>(lock, &node, env);
                const uint64_t v = *static_cast<volatile uint64_t*>(&counter);
                spinlock::cpu_pause();
                *static_cast<volatile uint64_t*>(&counter) = v + 1;
                lock_release<L>(lock, env);
                if (mine.acquisitions != mine.uncontended) someone_contended = true;
            }
            done[i] = n;
        });
    }
    for (auto& t : threads) t.join();
    uint64_t total = 0;
    for (uint64_t n : done) total += n;
    EXPECT_EQ(counter, total);
    LockClassPerf merged{};
    uint64_t contended = 0;
    for (uint32_t i = 0; i < kThreads; i++) {
        const LockClassPerf& p = cpus[i]->perf->classes[2];
        EXPECT_EQ(p.acquisitions, done[i]);
        EXPECT_TRUE(wait_invariant_holds(p));
        uint64_t lhp = 0;
        for (uint64_t n : p.lhp_count) lhp += n;
        EXPECT_EQ(lhp, p.acquisitions - p.uncontended);
        if (L == InstrumentLevel::kFull) {
            EXPECT_GE(p.holds_timed, p.acquisitions - p.uncontended);
            EXPECT_EQ(hold_hist_total(p) + p.hold_overflow, p.holds_timed);
        } else {
            EXPECT_EQ(p.holds_timed, 0u);
        }
        contended += p.acquisitions - p.uncontended;
        merge_class_perf(merged, p);
    }
    EXPECT_EQ(merged.acquisitions, total);
    EXPECT_TRUE(wait_invariant_holds(merged));
    EXPECT_GT(contended, 0u) << "the stress never contended: it tested nothing";
}

TEST_P(InstrumentedLockTest, InvariantUnderStressCounters) {
    stress<InstrumentLevel::kCounters>(GetParam());
}
TEST_P(InstrumentedLockTest, InvariantUnderStressFull) {
    stress<InstrumentLevel::kFull>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, InstrumentedLockTest,
                         ::testing::Values(LockAlgorithm::kTestAndSet, LockAlgorithm::kTicket,
                                           LockAlgorithm::kQueued, LockAlgorithm::kParavirt,
                                           LockAlgorithm::kPreemptableTicket,
                                           LockAlgorithm::kParavirtQueued, LockAlgorithm::kStudent),
                         [](const auto& info) { return lock_algorithm_name(info.param); });

}  // namespace
}  // namespace spinlab::lockstat
