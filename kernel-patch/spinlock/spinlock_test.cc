// spinlock/spinlock_test.cc: the four algorithms on the host, each std::thread playing a CPU.
#include "spinlock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "host_env.h"

namespace spinlab::spinlock {
namespace {

using Env = HostEnv<>;

class AlgorithmTest : public ::testing::TestWithParam<LockAlgorithm> {
  protected:
    Env env_for(uint32_t cpu) {
        Env e;
        e.algo = GetParam();
        e.cpu_id = cpu;
        e.yield_every = 64;
        return e;
    }
};

TEST_P(AlgorithmTest, TryAcquireWinsWhenFreeAndFailsWhenHeld) {
    Lock l;
    lock_init(l, "t", 3);
    McsNode n0, n1;
    Env e0 = env_for(0), e1 = env_for(1);
    EXPECT_FALSE(is_locked(l, GetParam()));
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    EXPECT_TRUE(is_locked(l, GetParam()));
    EXPECT_EQ(l.holder_cpu, 0u);
    EXPECT_FALSE(try_acquire(l, &n1, e1));  // held: one attempt, no waiting, no queueing
    EXPECT_EQ(l.holder_cpu, 0u);
    release(l, e0);
    EXPECT_FALSE(is_locked(l, GetParam()));
    EXPECT_EQ(l.holder_cpu, kNoCpu);
    ASSERT_TRUE(try_acquire(l, &n1, e1));
    EXPECT_EQ(l.holder_cpu, 1u);
    release(l, e1);
}

TEST_P(AlgorithmTest, ContendedAcquireWaitsForTheRelease) {
    Lock l;
    lock_init(l, "t", 0);
    McsNode n0, n1;
    Env e0 = env_for(0);
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        Env e1 = env_for(1);
        ASSERT_FALSE(try_acquire(l, &n1, e1));
        acquire_contended(l, &n1, e1);
        got = true;
        EXPECT_EQ(l.holder_cpu, 1u);
        release(l, e1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(got.load());  // still spinning while we hold it
    release(l, e0);
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_FALSE(is_locked(l, GetParam()));
}

// Mutual exclusion: a non-atomic read-pause-write of a shared counter loses updates as soon
// as two threads are inside together. Each thread runs kIters pairs and goes on (up to a
// deadline) until some thread has contended: on a loaded host the threads may otherwise run
// one after another and test nothing.
TEST_P(AlgorithmTest, MutualExclusionUnderStress) {
    constexpr int kThreads = 4;
    constexpr uint64_t kIters = 20000;
    Lock l;
    lock_init(l, "stress", 1);
    uint64_t counter = 0;
    std::atomic<int> ready{0};
    std::atomic<uint64_t> contended{0};
    std::atomic<uint64_t> total{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            Env e = env_for(static_cast<uint32_t>(t));
            McsNode node;
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();
            uint64_t n = 0;
            for (; n < kIters || (contended.load(std::memory_order_relaxed) == 0 &&
                                  (n % 1024 || std::chrono::steady_clock::now() < deadline));
                 n++) {
                if (!try_acquire(l, &node, e)) {
                    contended++;
                    acquire_contended(l, &node, e);
                }
                EXPECT_EQ(l.holder_cpu, static_cast<uint32_t>(t));
                uint64_t v = *static_cast<volatile uint64_t*>(&counter);
                cpu_pause();
                *static_cast<volatile uint64_t*>(&counter) = v + 1;
                release(l, e);
            }
            total += n;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(counter, total.load());
    EXPECT_FALSE(is_locked(l, GetParam()));
    EXPECT_GT(contended.load(), 0u) << "the stress never contended: it tested nothing";
}

INSTANTIATE_TEST_SUITE_P(All, AlgorithmTest,
                         ::testing::Values(LockAlgorithm::kTestAndSet, LockAlgorithm::kTicket,
                                           LockAlgorithm::kQueued, LockAlgorithm::kParavirt),
                         [](const auto& info) { return lock_algorithm_name(info.param); });

TEST(ParavirtLock, YieldsTowardsTheHolderAfterTheSpinBound) {
    Lock l;
    lock_init(l, "pv", 0);
    Env holder;
    holder.algo = LockAlgorithm::kParavirt;
    holder.cpu_id = 7;
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    Env waiter = holder;
    waiter.cpu_id = 2;
    waiter.pv_bound = 4;
    std::thread t([&] { acquire(l, nullptr, waiter); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release(l, holder);
    t.join();
    EXPECT_GT(waiter.yields, 0u);
    EXPECT_EQ(waiter.last_yield_target, 7u);
    release(l, waiter);
}

TEST(TestAndSetLock, DoesNotYieldAndCallsTheLockupCheckWhileSpinningLong) {
    Lock l;
    lock_init(l, "tas", 0);
    Env holder;
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    Env waiter;
    waiter.cpu_id = 1;
    waiter.pause = false;  // spin as fast as possible: reach kSpinCheckInterval quickly
    std::thread t([&] { acquire(l, nullptr, waiter); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    release(l, holder);
    t.join();
    EXPECT_EQ(waiter.yields, 0u);
    EXPECT_GT(waiter.spin_checks, 0u);
    release(l, waiter);
}

TEST(TicketLock, ServingWrapsWithoutCarryingIntoTheTicketCounter) {
    Lock l;
    lock_init(l, "ticket", 0);
    l.word.ticket.serving = 0xFFFF;
    l.word.ticket.next = 0xFFFF;
    Env e;
    e.algo = LockAlgorithm::kTicket;
    ASSERT_TRUE(try_acquire(l, nullptr, e));
    EXPECT_EQ(l.word.ticket.next, 0u);
    release(l, e);
    EXPECT_EQ(l.word.ticket.serving, 0u);
    EXPECT_EQ(l.word.ticket.next, 0u);
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kTicket));
    ASSERT_TRUE(try_acquire(l, nullptr, e));
    release(l, e);
}

TEST(QueuedLock, ReleaseHandsOverToTheQueuedSuccessorInOrder) {
    Lock l;
    lock_init(l, "mcs", 0);
    Env e0;
    e0.algo = LockAlgorithm::kQueued;
    McsNode n0, n1, n2;
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    std::vector<int> order;
    std::thread t1([&] {
        Env e = e0;
        e.cpu_id = 1;
        acquire_contended(l, &n1, e);
        order.push_back(1);
        release(l, e);
    });
    while (load_relaxed(&l.mcs_tail) != &n1) std::this_thread::yield();  // t1 queued first
    std::thread t2([&] {
        Env e = e0;
        e.cpu_id = 2;
        acquire_contended(l, &n2, e);
        order.push_back(2);
        release(l, e);
    });
    while (load_relaxed(&l.mcs_tail) != &n2) std::this_thread::yield();
    release(l, e0);
    t1.join();
    t2.join();
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_EQ(l.mcs_tail, nullptr);
}

}  // namespace
}  // namespace spinlab::spinlock
