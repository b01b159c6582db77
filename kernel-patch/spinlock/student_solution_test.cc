// spinlock/student_solution_test.cc: lab 5's reference solution
// (labs/solutions/student_lock_solution.h) as lock=student: mutual exclusion under threads, and
// its yield to a preempted holder. The solution is included before algorithms.h; it shares its
// include guard with the exercise (student_lock.h), so algorithms.h's own
// #include "student_lock.h" is skipped.
// SPINLAB_STUDENT_SOLUTION (host.cmake) is the solution's path. Built only while labs/solutions/
// exists (an instructor may remove it before handing the labs out).
#include SPINLAB_STUDENT_SOLUTION

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "algorithms.h"
#include "host_env.h"

namespace spinlab::spinlock {
namespace {

using Env = HostEnv;

TEST(StudentSolution, IsTheLockThatSpinlockHBuilds) {
    // The exercise has no backoff; the solution's constant exists only if it was included.
    EXPECT_GT(kStudentMaxBackoff, 1u);
}

TEST(StudentSolution, MutualExclusionUnderStress) {
    constexpr int kThreads = 4;
    constexpr uint64_t kIters = 20000;
    Lock l;
    lock_init(l, "student", 1);
    uint64_t counter = 0;
    std::atomic<int> ready{0};
    std::atomic<uint64_t> contended{0}, total{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            Env e;
            e.algo = LockAlgorithm::kStudent;
            e.cpu_id = static_cast<uint32_t>(t);
            e.yield_every = 64;
            // CPU 1 counts as preempted: waiters while it holds the lock take the yield path.
            e.preempted_fn = [](void*, uint32_t cpu) { return cpu == 1; };
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();
            uint64_t n = 0;
            for (; n < kIters || (contended.load(std::memory_order_relaxed) == 0 &&
                                  (n % 1024 || std::chrono::steady_clock::now() < deadline));
                 n++) {
                if (!try_acquire(l, nullptr, e)) {
                    contended++;
                    acquire_contended(l, nullptr, e);
                }
                EXPECT_EQ(l.holder_cpu, static_cast<uint32_t>(t));
                const uint64_t v = *static_cast<volatile uint64_t*>(&counter);
                cpu_pause();
                *static_cast<volatile uint64_t*>(&counter) = v + 1;
                release(l, e);
            }
            total += n;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(counter, total.load());
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kStudent));
    EXPECT_GT(contended.load(), 0u) << "the stress never contended: it tested nothing";
}

// One thread: the holder (CPU 4) is preempted for the waiter's first 20 looks, then runs and
// lets go 10 spins later.
struct Script {
    Lock* l;
    Env* holder;
    uint64_t calls = 0;
};

TEST(StudentSolution, YieldsWhileTheHolderIsPreemptedAndSpinsWhileItRuns) {
    Lock l;
    lock_init(l, "student", 0);
    Env holder;
    holder.algo = LockAlgorithm::kStudent;
    holder.cpu_id = 4;
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    Script s{&l, &holder};
    Env waiter = holder;
    waiter.cpu_id = 2;
    waiter.pause = false;
    waiter.script_arg = &s;
    waiter.preempted_fn = [](void* a, uint32_t cpu) {
        return cpu == 4 && static_cast<Script*>(a)->calls < 20;
    };
    waiter.on_spin = [](void* a) {
        auto& sc = *static_cast<Script*>(a);
        if (++sc.calls == 30) release(*sc.l, *sc.holder);
    };
    const uint64_t spins = acquire_contended(l, nullptr, waiter);
    EXPECT_EQ(waiter.yields, 20u) << "spun on while the holder's vCPU was preempted";
    EXPECT_EQ(waiter.last_yield_target, 4u);
    EXPECT_EQ(spins, 30u);
    EXPECT_EQ(l.holder_cpu, 2u);
    release(l, waiter);
}

}  // namespace
}  // namespace spinlab::spinlock
