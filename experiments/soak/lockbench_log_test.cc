// experiments/soak/lockbench_log_test.cc: the console lines as lockbench.cc prints them.
#include "lockbench_log.h"

#include <gtest/gtest.h>

namespace spinlab::soak {
namespace {

TEST(LockbenchLog, FollowsRoundsAndCounts) {
    LockbenchLog log;
    EXPECT_FALSE(log.between_rounds());
    log.feed("lockbench: 4 threads on 4 CPUs, 4 locks (random), cs 200 cycles, think 200 cycles, "
             "algorithm mcs, timed\r\nlockbench: round 1 start\r\n");
    EXPECT_FALSE(log.between_rounds());
    log.feed("lockbench: round 1: total 1000 ops, 500 ops/s\r\n"
             "lockbench: round 1: class user0 (id 16): 600 acquisitions\r\n"
             "lockbench: round 1: class id 16: kernel counters agree (600)\r\n"
             "lockbench: round 1: class user1 (id 17): 400 acqui");
    EXPECT_TRUE(log.between_rounds());
    EXPECT_EQ(log.rounds_ended(), 1u);
    EXPECT_EQ(log.counts().size(), 1u);  // the second class line is not whole yet
    log.feed("sitions\r\n");
    EXPECT_EQ(log.counts().at(16), 600u);
    EXPECT_EQ(log.counts().at(17), 400u);
    EXPECT_EQ(log.agreements(), 1u);
    log.feed("lockbench: round 2 start\r\n");
    EXPECT_FALSE(log.between_rounds());
    log.feed("lockbench: round 2: total 2000 ops, 500 ops/s\r\nlockbench: round 2: class user0 (id 16): 1300 acquisitions\r\n");
    EXPECT_TRUE(log.between_rounds());
    EXPECT_EQ(log.rounds_ended(), 2u);
    EXPECT_EQ(log.counts().at(16), 1300u);
    EXPECT_EQ(log.counts().count(17), 0u);  // round 1's count is not round 2's: not compared
    EXPECT_TRUE(log.problems().empty());
    EXPECT_TRUE(log.panics().empty());
}

TEST(LockbenchLog, ReportsDisagreementsBrokenInvariantsAndPanics) {
    LockbenchLog log;
    log.feed("lockbench: round 3: class id 16: the kernel counted 5 acquisitions, lockbench made 6\n"
             "lockbench: class 16: uncontended + waits + overflow != acquisitions\n"
             "lockbench: query class 16: STATUS_INVALID_PARAMETER\n"
             "kmix: spawn 12\n"
             "\nPANIC on cpu 0: sched: lockbench holds a spinlock other than sched_lock\n");
    ASSERT_EQ(log.problems().size(), 3u);
    EXPECT_NE(log.problems()[0].find("lockbench made 6"), std::string::npos);
    ASSERT_EQ(log.panics().size(), 1u);
    EXPECT_NE(log.panics()[0].find("sched_lock"), std::string::npos);
}

TEST(LockbenchLog, OtherOutputChangesNothing) {
    LockbenchLog log;
    log.feed("lockbench: round 1 start\nkmix: round 1: spawned\nlockbench: thread 0 cpu 0: 5 ops\n");
    EXPECT_FALSE(log.between_rounds());
    EXPECT_TRUE(log.problems().empty());
    EXPECT_TRUE(log.counts().empty());
}

}  // namespace
}  // namespace spinlab::soak
