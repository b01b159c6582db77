// spinlock/spinlock_test.cc: the lock algorithms on the host, each std::thread playing a CPU;
// and, single-threaded with a scripted Env (on_spin plays the rest of the machine), the paths
// that only preemption takes: pticket skipping a stalled turn, pvmcs yielding; pvqspin's halts
// and kicks under a strict model of hlt (HostEnv::kicks: only a kick ends a halt), and its ring-3
// form, sleeping in a futex-like word wait that only a wake of that word ends (WordEnv).
#include "algorithms.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "host_env.h"

namespace spinlab::spinlock {
namespace {

using Env = HostEnv;

// The stress's scripted preemption: CPUs 1 and 3 always count as preempted, so pvmcs waiters
// behind them (and student waiters, once they look) yield.
bool odd_cpus_preempted(void*, uint32_t cpu) { return (cpu & 1) != 0; }

class AlgorithmTest : public ::testing::TestWithParam<LockAlgorithm> {
  protected:
    Env env_for(uint32_t cpu) {
        Env e;
        e.algo = GetParam();
        e.cpu_id = cpu;
        e.yield_every = 64;
        e.pticket_unit = 16;  // stalled turns are skipped often: pticket's CAS path runs too
        e.preempted_fn = odd_cpus_preempted;
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
                                           LockAlgorithm::kQueued, LockAlgorithm::kParavirt,
                                           LockAlgorithm::kPreemptableTicket,
                                           LockAlgorithm::kParavirtQueued, LockAlgorithm::kStudent,
                                           LockAlgorithm::kPvQspinlock),
                         [](const auto& info) { return lock_algorithm_name(info.param); });

TEST(Algorithms, EveryAlgorithmHasANameAndOnlyTheQueuedOnesTakeANode) {
    for (uint32_t a = 0; a < kLockAlgorithmCount; a++)
        EXPECT_STRNE(lock_algorithm_name(LockAlgorithm(a)), "invalid") << a;
    EXPECT_STREQ(lock_algorithm_name(LockAlgorithm(kLockAlgorithmCount)), "invalid");
    EXPECT_TRUE(uses_queue_node(LockAlgorithm::kQueued));
    EXPECT_TRUE(uses_queue_node(LockAlgorithm::kParavirtQueued));
    EXPECT_TRUE(uses_queue_node(LockAlgorithm::kPvQspinlock));
    EXPECT_FALSE(uses_queue_node(LockAlgorithm::kPreemptableTicket));
    EXPECT_FALSE(uses_queue_node(LockAlgorithm::kStudent));
}

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
    // The first yield: the last may come after the release cleared holder_cpu (kNoCpu) and
    // before it let go of the word (one clean-clone make test saw that).
    EXPECT_EQ(waiter.first_yield_target, 7u);
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

// --- pticket: a stalled turn is skipped, its waiter rejoins -------------------------------------
// One thread plays every CPU. The waiter under test spins in pticket_wait(); its Env's on_spin
// is the rest of the machine: the holder releasing, a preempted waiter coming back. A ghost
// ticket (pticket_take_ticket without waiting) is a waiter whose vCPU is preempted.
struct PticketScript {
    Lock* l;
    Env* holder;             // releases at spin `release_at`
    uint64_t spins = 0;
    uint64_t release_at = 10;
    // At spin ghost_back_at the ghosts (tickets, in order) run again: each takes its turn and
    // releases. A test whose waiter must not wait for them sets it far beyond the timeout, so
    // that a broken lock fails the test instead of hanging it.
    uint64_t ghost_back_at = ~0ull;
    uint32_t ghosts[2] = {};
    int ghost_count = 0;
    bool ghost_done = false;
};

void pticket_script(void* arg) {
    auto& s = *static_cast<PticketScript*>(arg);
    s.spins++;
    if (s.spins == s.release_at) release(*s.l, *s.holder);
    if (s.spins == s.ghost_back_at && !s.ghost_done) {
        Env g = *s.holder;
        g.on_spin = nullptr;
        for (int i = 0; i < s.ghost_count; i++) {
            pticket_wait(*s.l, s.ghosts[i], g);  // its turn has come: takes the lock at once
            release(*s.l, g);
        }
        s.ghost_done = true;
    }
}

Env pticket_env(uint32_t cpu, uint32_t unit) {
    Env e;
    e.algo = LockAlgorithm::kPreemptableTicket;
    e.cpu_id = cpu;
    e.pause = false;
    e.pticket_unit = unit;
    return e;
}

TEST(PreemptableTicketLock, SkipsATurnThatStallsForTheTimeout) {
    constexpr uint32_t kUnit = 100;
    Lock l;
    lock_init(l, "pticket", 0);
    Env holder = pticket_env(0, kUnit);
    ASSERT_TRUE(try_acquire(l, nullptr, holder));   // ticket 0
    const uint32_t ghost = pticket_take_ticket(l);  // ticket 1: its vCPU is preempted
    PticketScript s{&l, &holder};
    s.ghosts[s.ghost_count++] = ghost;
    s.ghost_back_at = 50 * kUnit;  // comes back long after the timeout (a broken lock waits for it)
    Env waiter = pticket_env(2, kUnit);
    waiter.on_spin = pticket_script;
    waiter.script_arg = &s;
    const uint64_t spins = acquire_contended(l, nullptr, waiter);  // ticket 2, one behind the head
    EXPECT_FALSE(s.ghost_done) << "waited for the preempted waiter's turn: nothing was skipped";
    // The holder let go at spin 10; the ghost's turn then stalled for kUnit spins.
    EXPECT_GE(spins, 10 + kUnit - 1);
    EXPECT_LE(spins, 10 + kUnit + 2);
    EXPECT_TRUE(is_locked(l, LockAlgorithm::kPreemptableTicket));
    EXPECT_EQ(l.holder_cpu, 2u);
    EXPECT_EQ(pticket_serving(l.word.pticket.state), 1u);  // one release so far
    release(l, waiter);
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kPreemptableTicket));
}

TEST(PreemptableTicketLock, TheSkippedWaiterRejoinsAtOnceWhenItRunsAgain) {
    Lock l;
    lock_init(l, "pticket", 0);
    Env holder = pticket_env(0, 100);
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    const uint32_t ghost = pticket_take_ticket(l);
    Env other = pticket_env(2, 100);
    ASSERT_FALSE(try_acquire(l, nullptr, other));  // tickets outstanding: no fast path
    const uint32_t mine = pticket_take_ticket(l);
    release(l, holder);                 // serving 1: the ghost's turn, which stalls
    PticketScript s{&l, &holder};       // (a broken lock waits for the ghost until spin 5000)
    s.release_at = 0;
    s.ghosts[s.ghost_count++] = ghost;
    s.ghost_back_at = 5000;
    other.on_spin = pticket_script;
    other.script_arg = &s;
    pticket_wait(l, mine, other);       // so ticket 2 takes the lock after the timeout
    ASSERT_FALSE(s.ghost_done) << "waited for the preempted waiter's turn: nothing was skipped";
    release(l, other);                  // serving 3: the ghost's turn has passed
    Env back = pticket_env(1, 1u << 30);  // a timeout it could never sit out in this test
    EXPECT_LT(pticket_distance(ghost, pticket_serving(l.word.pticket.state)), 0);
    EXPECT_EQ(pticket_wait(l, ghost, back), 0u);  // rejoins at the head: takes the free lock
    release(l, back);
    // Every ticket handed out was released: free and empty, so the fast path works again.
    EXPECT_TRUE(try_acquire(l, nullptr, holder));
    release(l, holder);
}

// The paper's release adds one to the head; then the skipped ticket's unused turn would keep
// every later waiter one place behind, each hand-over waiting out a timeout. Here the release
// moves serving past the releaser's ticket: one timeout per skipped turn.
TEST(PreemptableTicketLock, AfterASkippedTurnTheNextTurnsNeedNoTimeout) {
    constexpr uint32_t kUnit = 100;
    Lock l;
    lock_init(l, "pticket", 0);
    Env holder = pticket_env(0, kUnit);
    ASSERT_TRUE(try_acquire(l, nullptr, holder));  // ticket 0
    const uint32_t ghost = pticket_take_ticket(l);  // ticket 1: preempted
    const uint32_t b = pticket_take_ticket(l), c = pticket_take_ticket(l);
    release(l, holder);  // the ghost's turn, which stalls
    Env eb = pticket_env(2, kUnit), ec = pticket_env(3, kUnit);
    EXPECT_GE(pticket_wait(l, b, eb), kUnit - 1);  // b skips it after the timeout
    release(l, eb);
    EXPECT_EQ(pticket_wait(l, c, ec), 0u) << "the turn after b's waited out a timeout too";
    release(l, ec);
    Env back = pticket_env(1, kUnit);
    EXPECT_EQ(pticket_wait(l, ghost, back), 0u);  // rejoins; its release leaves serving alone
    release(l, back);
    EXPECT_EQ(pticket_serving(l.word.pticket.state), 4u);
    EXPECT_TRUE(try_acquire(l, nullptr, holder));
    release(l, holder);
}

TEST(PreemptableTicketLock, StaysFifoWhileTheQueueMoves) {
    constexpr uint32_t kUnit = 100;
    Lock l;
    lock_init(l, "pticket", 0);
    Env holder = pticket_env(0, kUnit);
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    PticketScript s{&l, &holder};
    s.ghosts[s.ghost_count++] = pticket_take_ticket(l);  // ticket 1 runs: takes its turn in time
    s.ghost_back_at = 10 + kUnit / 2;
    Env waiter = pticket_env(2, kUnit);
    waiter.on_spin = pticket_script;
    waiter.script_arg = &s;
    const uint64_t spins = acquire_contended(l, nullptr, waiter);
    EXPECT_TRUE(s.ghost_done) << "took the lock before the waiter ahead, whose turn did not stall";
    EXPECT_EQ(spins, 10 + kUnit / 2);  // the lock was free the moment ticket 1 let go
    release(l, waiter);
}

TEST(PreemptableTicketLock, TheTimeoutGrowsWithTheDistanceFromTheHead) {
    constexpr uint32_t kUnit = 50;
    Lock l;
    lock_init(l, "pticket", 0);
    Env holder = pticket_env(0, kUnit);
    ASSERT_TRUE(try_acquire(l, nullptr, holder));
    PticketScript s{&l, &holder};
    s.ghosts[s.ghost_count++] = pticket_take_ticket(l);  // tickets 1 and 2: both preempted
    s.ghosts[s.ghost_count++] = pticket_take_ticket(l);
    s.ghost_back_at = 50 * kUnit;
    s.release_at = 1;
    Env waiter = pticket_env(3, kUnit);  // ticket 3: two places behind the head after the release
    waiter.on_spin = pticket_script;
    waiter.script_arg = &s;
    const uint64_t spins = acquire_contended(l, nullptr, waiter);
    EXPECT_FALSE(s.ghost_done) << "waited for the preempted waiters' turns: nothing was skipped";
    EXPECT_GE(spins, 2 * kUnit);
    EXPECT_LE(spins, 2 * kUnit + 2);
    release(l, waiter);
}

TEST(PreemptableTicketLock, CountersWrapTogether) {
    Lock l;
    lock_init(l, "pticket", 0);
    l.word.pticket.next = 0xFFFFFFFFu;  // serving 2^31 - 1 == next mod 2^31: free
    l.word.pticket.state = 0x7FFFFFFFu << 1;
    Env e = pticket_env(0, 100);
    ASSERT_TRUE(try_acquire(l, nullptr, e));
    EXPECT_EQ(l.word.pticket.next, 0u);
    release(l, e);
    EXPECT_EQ(l.word.pticket.state, 0u);
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kPreemptableTicket));
    ASSERT_TRUE(try_acquire(l, nullptr, e));
    release(l, e);
}

// --- pvmcs: spin while the vCPU ahead runs, yield while it is preempted -------------------------
struct PvmcsScript {
    Lock* l;
    Env* holder;
    uint32_t preempted_cpu;
    uint64_t calls = 0;
    uint64_t runs_again_at = 10;  // preempted for the first 9 spins
    uint64_t release_at = 15;
    McsNode* then_owner = nullptr;  // a queued predecessor that takes over and releases at once
    uint64_t second_spell_from = 0, second_spell_to = 0;  // preempted again for spins [from, to)
};

bool pvmcs_preempted(void* arg, uint32_t cpu) {
    auto& s = *static_cast<PvmcsScript*>(arg);
    const uint64_t spin = s.calls + 1;
    return cpu == s.preempted_cpu &&
           (spin < s.runs_again_at || (spin >= s.second_spell_from && spin < s.second_spell_to));
}

void pvmcs_script(void* arg) {
    auto& s = *static_cast<PvmcsScript*>(arg);
    s.calls++;
    if (s.calls != s.release_at) return;
    release(*s.l, *s.holder);
    if (s.then_owner) {  // the predecessor got the lock: it runs its critical section, lets go
        EXPECT_EQ(s.then_owner->waiting, 0u);
        s.l->mcs_owner = s.then_owner;
        Env p = *s.holder;
        p.cpu_id = s.then_owner->cpu;
        release(*s.l, p);
    }
}

Env pvmcs_env(uint32_t cpu) {
    Env e;
    e.algo = LockAlgorithm::kParavirtQueued;
    e.cpu_id = cpu;
    e.pause = false;
    return e;
}

TEST(PvQueuedLock, YieldsToThePreemptedHolderAheadThenSpins) {
    Lock l;
    lock_init(l, "pvmcs", 0);
    Env holder = pvmcs_env(5);
    McsNode hn, wn;
    ASSERT_TRUE(try_acquire(l, &hn, holder));
    EXPECT_EQ(hn.cpu, 5u);
    PvmcsScript s{&l, &holder, 5};
    Env waiter = pvmcs_env(2);
    waiter.preempted_fn = pvmcs_preempted;
    waiter.on_spin = pvmcs_script;
    waiter.script_arg = &s;
    const uint64_t spins = acquire_contended(l, &wn, waiter);
    EXPECT_EQ(waiter.yields, 1u) << "one yield per preempted spell of the vCPU ahead";
    EXPECT_EQ(waiter.last_yield_target, 5u);
    EXPECT_EQ(spins, 15u);  // 1 yield and 8 pauses while preempted, 6 pauses while it ran
    EXPECT_EQ(l.holder_cpu, 2u);
    EXPECT_EQ(l.mcs_owner, &wn);
    release(l, waiter);
    EXPECT_EQ(l.mcs_tail, nullptr);
}

TEST(PvQueuedLock, YieldsToAPreemptedHolderBehindARunningPredecessor) {
    Lock l;
    lock_init(l, "pvmcs", 0);
    Env holder = pvmcs_env(5);
    McsNode hn, pn, wn;
    ASSERT_TRUE(try_acquire(l, &hn, holder));
    // CPU 3 queued behind the holder (what pvmcs_acquire_contended does before it spins).
    pn.next = nullptr;
    pn.cpu = 3;
    pn.waiting = 1;
    __atomic_exchange_n(&l.mcs_tail, &pn, __ATOMIC_ACQ_REL)->next = &pn;
    PvmcsScript s{&l, &holder, 5};
    s.then_owner = &pn;
    Env waiter = pvmcs_env(2);
    waiter.preempted_fn = pvmcs_preempted;
    waiter.on_spin = pvmcs_script;
    waiter.script_arg = &s;
    acquire_contended(l, &wn, waiter);
    EXPECT_EQ(waiter.yields, 1u) << "the holder (not the predecessor) was preempted, one spell";
    EXPECT_EQ(waiter.last_yield_target, 5u);
    EXPECT_EQ(l.mcs_owner, &wn);
    release(l, waiter);
    EXPECT_EQ(l.mcs_tail, nullptr);
}

TEST(PvQueuedLock, YieldsOncePerPreemptedSpell) {
    Lock l;
    lock_init(l, "pvmcs", 0);
    Env holder = pvmcs_env(5);
    McsNode hn, wn;
    ASSERT_TRUE(try_acquire(l, &hn, holder));
    PvmcsScript s{&l, &holder, 5};
    s.runs_again_at = 4;  // preempted for spins 1-3, runs for 4-6, preempted for 7-11, runs on
    s.second_spell_from = 7;
    s.second_spell_to = 12;
    Env waiter = pvmcs_env(2);
    waiter.preempted_fn = pvmcs_preempted;
    waiter.on_spin = pvmcs_script;
    waiter.script_arg = &s;
    EXPECT_EQ(acquire_contended(l, &wn, waiter), 15u);
    EXPECT_EQ(waiter.yields, 2u) << "two spells: two yields, none while a spell lasts";
    EXPECT_EQ(waiter.first_yield_target, 5u);
    release(l, waiter);
}

TEST(PvQueuedLock, NeverYieldsWhenNothingIsPreempted) {
    Lock l;
    lock_init(l, "pvmcs", 0);
    Env holder = pvmcs_env(5);
    McsNode hn, wn;
    ASSERT_TRUE(try_acquire(l, &hn, holder));
    PvmcsScript s{&l, &holder, kNoCpu};
    Env waiter = pvmcs_env(2);
    waiter.preempted_fn = pvmcs_preempted;
    waiter.on_spin = pvmcs_script;
    waiter.script_arg = &s;
    EXPECT_EQ(acquire_contended(l, &wn, waiter), 15u);
    EXPECT_EQ(waiter.yields, 0u);
    EXPECT_GT(waiter.off_checks, 0u);
    release(l, waiter);
}

// --- pvqspin: halts, kicks, the one steal ----------------------------------------------------
// Threads play CPUs; HostEnv::kicks makes pv_wait a strict hlt: a waiter that the lock forgets
// to kick (or kicks before it could see the change) stays "halted" until halt_timeout after the
// change and is counted in lost_wakeups; one whose waker has not run yet waits on.
constexpr int kPvCpus = 8;

// iters acquisitions of l by one thread playing a CPU, each incrementing counter without an
// atomic (a lost update shows mutual exclusion broken); every 16th holder yields its host CPU,
// as a preempted holder would. Shared by the kernel (Env) and ring-3 (WordEnv) stress tests.
template <class E>
void preempted_holders_stress(Lock& l, McsNode& node, E& e, uint64_t iters, uint64_t& counter,
                              std::atomic<uint64_t>& contended) {
    for (uint64_t n = 0; n < iters; n++) {
        if (!try_acquire(l, &node, e)) {
            contended++;
            acquire_contended(l, &node, e);
        }
        uint64_t v = *static_cast<volatile uint64_t*>(&counter);
        cpu_pause();
        if (n % 16 == 0) std::this_thread::yield();  // a holder "preempted" now and then
        *static_cast<volatile uint64_t*>(&counter) = v + 1;
        release(l, e);
    }
}

Env pvq_env(uint32_t cpu, std::atomic<uint64_t>* kicks, uint32_t bound) {
    Env e;
    e.algo = LockAlgorithm::kPvQspinlock;
    e.cpu_id = cpu;
    e.kicks = kicks;
    e.pvq_bound = bound;
    return e;
}

// Mutual exclusion with a short spin bound and CPUs 1 and 3 "preempted" (waiters behind them
// halt at once): every wait that halts must be ended by a kick, none may be lost.
TEST(PvQspinlock, StrictHaltsLoseNoWakeUpUnderStress) {
    constexpr int kThreads = 4;
    constexpr uint64_t kIters = 20000;
    std::atomic<uint64_t> kicks[kPvCpus] = {};
    Lock l;
    lock_init(l, "pvq", 1);
    uint64_t counter = 0;
    std::atomic<int> ready{0};
    std::atomic<uint64_t> total{0}, halts{0}, kicked{0}, lost{0}, spurious{0}, contended{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            Env e = pvq_env(static_cast<uint32_t>(t), kicks, 8);
            e.preempted_fn = odd_cpus_preempted;
            e.halt_timeout = std::chrono::milliseconds(3000);
            McsNode node;
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();
            preempted_holders_stress(l, node, e, kIters, counter, contended);
            total += kIters;
            halts += e.pv(PvEvent::kHalt);
            kicked += e.pv(PvEvent::kKick);
            spurious += e.pv(PvEvent::kSpuriousWakeup);
            lost += e.lost_wakeups;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(counter, total.load());
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kPvQspinlock));
    EXPECT_EQ(l.mcs_tail, nullptr);
    EXPECT_EQ(lost.load(), 0u) << "halted waiters that no kick woke";
    EXPECT_GT(contended.load(), 0u) << "the stress never contended: it tested nothing";
    EXPECT_GT(halts.load(), 0u) << "nobody halted: the halt path was not tested";
    EXPECT_GT(kicked.load(), 0u);
    // A spurious wake-up here is only a lost wake-up's timeout: none.
    EXPECT_EQ(spurious.load(), 0u);
    for (uint32_t i = 0; i < kPvHashEntries; i++) EXPECT_EQ(pv_hash_table()[i].lock, nullptr) << i;
    std::printf("pvqspin stress: %lu acquisitions, %lu contended, %lu halts, %lu kicks\n",
                (unsigned long)total.load(), (unsigned long)contended.load(),
                (unsigned long)halts.load(), (unsigned long)kicked.load());
}

// The queue head spins the bound, then records lock -> node in the hash, marks the byte slow
// and halts; the release finds it there, frees the byte and kicks it.
TEST(PvQspinlock, TheHeadHaltsAfterTheBoundAndTheReleaseKicksIt) {
    std::atomic<uint64_t> kicks[kPvCpus] = {};
    Lock l;
    lock_init(l, "pvq", 0);
    McsNode n0, n1;
    Env e0 = pvq_env(0, kicks, 16);
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    Env e1 = pvq_env(1, kicks, 16);
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        acquire_contended(l, &n1, e1);
        got = true;
        release(l, e1);
    });
    while (load_acquire(&l.word.pvq_locked) != kPvqSlow) std::this_thread::yield();
    const PvHashEntry* entry = nullptr;
    for (uint32_t i = 0; i < kPvHashEntries; i++)
        if (load_acquire(&pv_hash_table()[i].lock) == &l) entry = &pv_hash_table()[i];
    ASSERT_NE(entry, nullptr) << "slow, but the head is not in the hash";
    EXPECT_EQ(entry->node, &n1);
    EXPECT_EQ(load_relaxed(&n1.pv_state), kPvHashed);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(got.load());  // halted: only the kick ends it
    release(l, e0);
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_EQ(e0.pv(PvEvent::kKick), 1u);
    EXPECT_EQ(kicks[1].load(), 1u);
    EXPECT_EQ(e1.pv(PvEvent::kHalt), 1u);
    EXPECT_EQ(e1.pv(PvEvent::kSpuriousWakeup), 0u);
    EXPECT_EQ(e1.lost_wakeups, 0u);
    EXPECT_EQ(load_relaxed(&entry->lock), nullptr);  // the release took it out
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kPvQspinlock));
}

// A queued waiter whose predecessor's vCPU is preempted halts at once (the check at loop 0),
// not after the bound; the predecessor, becoming the holder, makes it the head and kicks it.
bool cpu1_preempted(void*, uint32_t cpu) { return cpu == 1; }

TEST(PvQspinlock, AWaiterBehindAPreemptedPredecessorHaltsEarlyAndIsKickedAtTheHandOver) {
    std::atomic<uint64_t> kicks[kPvCpus] = {};
    Lock l;
    lock_init(l, "pvq", 0);
    McsNode n0, n1, n2;
    Env e0 = pvq_env(0, kicks, 1u << 30);  // spinners that never reach the bound
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    Env e1 = pvq_env(1, kicks, 1u << 30);
    Env e2 = pvq_env(2, kicks, 1u << 30);
    e2.preempted_fn = cpu1_preempted;
    std::vector<int> order;
    std::atomic<bool> t1_may_release{false};
    std::thread t1([&] {
        acquire_contended(l, &n1, e1);
        order.push_back(1);
        while (!t1_may_release.load()) std::this_thread::yield();
        release(l, e1);
    });
    while (load_relaxed(&l.mcs_tail) != &n1) std::this_thread::yield();
    std::thread t2([&] {
        acquire_contended(l, &n2, e2);
        order.push_back(2);
        release(l, e2);
    });
    while (load_relaxed(&n2.pv_state) != kPvHalted) std::this_thread::yield();
    release(l, e0);  // t1 takes it and hands the head to t2: a kick
    while (e1.pv(PvEvent::kKick) == 0) std::this_thread::yield();
    t1_may_release = true;
    t1.join();
    t2.join();
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_EQ(e1.pv(PvEvent::kKick), 1u);
    EXPECT_EQ(kicks[2].load(), 1u);
    EXPECT_EQ(e2.pv(PvEvent::kHalt), 1u);
    EXPECT_LT(e2.pv(PvEvent::kHalt), 2u);
    EXPECT_EQ(e2.lost_wakeups, 0u);
    EXPECT_EQ(e0.pv(PvEvent::kKick), 0u);  // nobody was in the hash: the release's fast path
    EXPECT_EQ(l.mcs_tail, nullptr);
}

// The fast path does not pass a queue; the one attempt before queueing does (a steal).
TEST(PvQspinlock, OnlyTheOneAttemptBeforeQueueingTakesAFreeLockPastTheQueue) {
    Lock l;
    lock_init(l, "pvq", 0);
    McsNode queued{}, n1;
    store_relaxed(&l.mcs_tail, &queued);  // a waiter queued (its vCPU elsewhere)
    Env e1 = pvq_env(1, nullptr, 16);
    EXPECT_FALSE(try_acquire(l, &n1, e1)) << "the fast path went past the queue";
    EXPECT_EQ(acquire_contended(l, &n1, e1), 0u);  // the steal: no queueing, no spin
    EXPECT_EQ(e1.pv(PvEvent::kSteal), 1u);
    EXPECT_EQ(l.holder_cpu, 1u);
    EXPECT_EQ(l.mcs_tail, &queued);  // the queue is as it was
    release(l, e1);
    store_relaxed(&l.mcs_tail, static_cast<McsNode*>(nullptr));
    // Without a queue, a free lock at that attempt is no steal.
    Env e2 = pvq_env(2, nullptr, 16);
    ASSERT_TRUE(try_acquire(l, &n1, e2));
    release(l, e2);
    EXPECT_EQ(acquire_contended(l, &n1, e2), 0u);
    EXPECT_EQ(e2.pv(PvEvent::kSteal), 0u);
    release(l, e2);
}

// --- pvqspin in ring 3: sleeping in a word wait (PvWordEnv) ----------------------------------
// kSysWordWait/kSysWordWake as the kernel has them (kern/word_wait.cc): the check of the word and
// the queueing of the sleeper under one lock that the wake takes too; a sleeper returns only
// when a wake of its word came after it was queued, or once it is overdue (a lost wake-up:
// HostEnv::WakeWatch).
struct WordQueue {
    std::mutex m;
    std::condition_variable cv;
    std::map<const uint32_t*, uint64_t> wakes;     // wake calls per word
    std::map<const uint32_t*, int> sleeping;       // sleepers per word now
};

// HostEnv without pv_wait and pv_kick (hidden: the lock must use the word pair), as lockbench's
// UserEnv is.
struct WordEnv : HostEnv {
    WordQueue* q = nullptr;
    uint64_t slept = 0, skipped = 0, wake_calls = 0;
    void pv_wait() = delete;
    void pv_kick() = delete;
    bool word_wait(const uint32_t* w, uint32_t v) {
        std::unique_lock<std::mutex> g(q->m);
        if (__atomic_load_n(w, __ATOMIC_SEQ_CST) != v) {
            skipped++;
            return false;
        }
        const uint64_t w0 = q->wakes[w];
        q->sleeping[w]++;
        // Lost: the word changed and no wake of it came within halt_timeout (HostEnv::pv_wait).
        WakeWatch watch{*this};
        while (q->wakes[w] == w0) {
            q->cv.wait_for(g, std::chrono::milliseconds(20));
            if (q->wakes[w] == w0 && watch.overdue(__atomic_load_n(w, __ATOMIC_SEQ_CST) != v)) {
                lost_wakeups++;
                break;
            }
        }
        q->sleeping[w]--;
        slept++;
        return true;
    }
    void word_wake(const uint32_t* w) {
        wake_calls++;
        {
            std::lock_guard<std::mutex> g(q->m);
            q->wakes[w]++;
        }
        q->cv.notify_all();
    }
};
static_assert(PvWordEnv<WordEnv> && !PvWaitEnv<WordEnv>);

// Mutual exclusion with a short bound and CPUs 1 and 3 "preempted": every sleep in the word wait
// must be ended by a wake of its word (none lost), and no waiter yields instead.
TEST(PvQspinlockWordWait, SleepersLoseNoWakeUpUnderStress) {
    constexpr int kThreads = 4;
    constexpr uint64_t kIters = 20000;
    WordQueue q;
    Lock l;
    lock_init(l, "pvq-ring3", 1);
    uint64_t counter = 0;
    std::atomic<int> ready{0};
    std::atomic<uint64_t> total{0}, slept{0}, wakes{0}, lost{0}, yields{0}, contended{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            WordEnv e;
            e.algo = LockAlgorithm::kPvQspinlock;
            e.cpu_id = static_cast<uint32_t>(t);
            e.pvq_bound = 8;
            e.q = &q;
            e.preempted_fn = odd_cpus_preempted;
            e.halt_timeout = std::chrono::milliseconds(3000);
            McsNode node{};
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();
            preempted_holders_stress(l, node, e, kIters, counter, contended);
            total += kIters;
            slept += e.slept;
            wakes += e.wake_calls;
            lost += e.lost_wakeups;
            yields += e.yields;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(counter, total.load());
    EXPECT_FALSE(is_locked(l, LockAlgorithm::kPvQspinlock));
    EXPECT_EQ(l.mcs_tail, nullptr);
    EXPECT_EQ(lost.load(), 0u) << "sleepers that no wake of their word woke";
    EXPECT_GT(contended.load(), 0u) << "the stress never contended: it tested nothing";
    EXPECT_GT(slept.load(), 0u) << "nobody slept in the word wait";
    EXPECT_GT(wakes.load(), 0u);
    EXPECT_EQ(yields.load(), 0u) << "a waiter yielded instead of sleeping";
    for (uint32_t i = 0; i < kPvHashEntries; i++) EXPECT_EQ(pv_hash_table()[i].lock, nullptr) << i;
    std::printf("pvqspin ring-3 stress: %lu acquisitions, %lu contended, %lu sleeps, %lu wakes\n",
                (unsigned long)total.load(), (unsigned long)contended.load(),
                (unsigned long)slept.load(), (unsigned long)wakes.load());
}

// The queue head sleeps on the word that holds the lock byte (kPvqSlow there), and the release
// wakes exactly that word after freeing the byte.
TEST(PvQspinlockWordWait, TheHeadSleepsOnTheLockWordAndTheReleaseWakesIt) {
    WordQueue q;
    Lock l;
    lock_init(l, "pvq-ring3", 0);
    McsNode n0{}, n1{};
    auto env = [&](uint32_t cpu) {
        WordEnv e;
        e.algo = LockAlgorithm::kPvQspinlock;
        e.cpu_id = cpu;
        e.pvq_bound = 16;
        e.q = &q;
        return e;
    };
    WordEnv e0 = env(0), e1 = env(1);
    ASSERT_TRUE(try_acquire(l, &n0, e0));
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        acquire_contended(l, &n1, e1);
        got = true;
        release(l, e1);
    });
    const uint32_t* lock_word = &l.word.raw;
    for (;;) {  // asleep in the word wait, on the lock's word
        std::lock_guard<std::mutex> g(q.m);
        if (q.sleeping[lock_word] == 1) break;
    }
    EXPECT_EQ(load_acquire(&l.word.pvq_locked), kPvqSlow);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(got.load());  // asleep: only the wake ends it
    release(l, e0);
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_EQ(e0.wake_calls, 1u);
    EXPECT_EQ(q.wakes[lock_word], 1u);
    EXPECT_EQ(e1.slept, 1u);
    EXPECT_EQ(e1.lost_wakeups, 0u);
    EXPECT_EQ(e1.yields, 0u);
}

}  // namespace
}  // namespace spinlab::spinlock
