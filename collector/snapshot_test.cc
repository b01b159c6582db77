// Snapshot merging across CPUs, interval deltas (reset-aware) and the invariant check.
#include "snapshot.h"

#include <gtest/gtest.h>

namespace spinlab::collect {
namespace {

LockClassPerf perf(uint64_t uncontended, uint32_t bucket, uint64_t waits, uint64_t max_wait) {
    LockClassPerf c{};
    c.uncontended = uncontended;
    c.wait_hist[bucket] = waits;
    c.acquisitions = uncontended + waits;
    c.wait_cycles_max = max_wait;
    c.lhp_count[uint32_t(LhpClass::kUnknown)] = waits;
    return c;
}

Snapshot two_cpus() {
    Snapshot s;
    s.cpus = {empty_cpu(0), empty_cpu(1)};
    s.cpus[0].classes[3] = perf(100, 8, 10, 300);
    s.cpus[1].classes[3] = perf(50, 9, 5, 900);
    s.cpus[1].classes[7] = perf(1, 4, 1, 20);
    return s;
}

TEST(Snapshot, MergeSumsCountsAndTakesTheLargestMaximum) {
    Snapshot s = two_cpus();
    LockClassPerf m = merge_cpus(s, 3);
    EXPECT_EQ(m.acquisitions, 165u);
    EXPECT_EQ(m.uncontended, 150u);
    EXPECT_EQ(m.wait_hist[8], 10u);
    EXPECT_EQ(m.wait_hist[9], 5u);
    EXPECT_EQ(m.wait_cycles_max, 900u);
    EXPECT_EQ(m.lhp_count[uint32_t(LhpClass::kUnknown)], 15u);
    EXPECT_EQ(wait_invariant_error(m), 0);
    EXPECT_EQ(merge_cpus(s, 0).acquisitions, 0u);
}

TEST(Snapshot, ActiveClassesAreThoseWithAcquisitionsOnAnyCpu) {
    EXPECT_EQ(active_classes(two_cpus()), (std::vector<uint32_t>{3, 7}));
}

TEST(Snapshot, DeltaSubtractsCountsAndKeepsTheLaterMaximum) {
    Snapshot a = two_cpus();
    Snapshot b = two_cpus();
    b.cpus[0].classes[3] = perf(130, 8, 14, 250);
    Snapshot d = snapshot_delta(b, a);
    const LockClassPerf& c = d.cpus[0].classes[3];
    EXPECT_EQ(c.uncontended, 30u);
    EXPECT_EQ(c.wait_hist[8], 4u);
    EXPECT_EQ(c.acquisitions, 34u);
    EXPECT_EQ(c.wait_cycles_max, 250u);
    EXPECT_EQ(wait_invariant_error(c), 0);
    EXPECT_EQ(d.cpus[1].classes[3].acquisitions, 0u);  // nothing happened on CPU 1
}

TEST(Snapshot, DeltaAcrossAResetCountsFromTheReset) {
    Snapshot a = two_cpus();
    Snapshot b = two_cpus();
    b.cpus[1].resets = 1;
    b.cpus[1].classes[3] = perf(2, 9, 1, 600);  // counting restarted at the reset
    Snapshot d = snapshot_delta(b, a);
    EXPECT_EQ(d.cpus[1].classes[3].acquisitions, 3u);
    // Every class of a reset CPU counts from the reset, even one not touched since.
    EXPECT_EQ(d.cpus[1].classes[7].acquisitions, 2u);
}

TEST(Snapshot, DeltaCountsACpuMissingEarlierFromZero) {
    Snapshot a;
    a.cpus = {empty_cpu(0)};
    a.cpus[0].classes[3] = perf(100, 8, 10, 300);
    Snapshot b = two_cpus();
    Snapshot d = snapshot_delta(b, a);
    EXPECT_EQ(d.cpus[0].classes[3].acquisitions, 0u);
    EXPECT_EQ(d.cpus[1].classes[3].acquisitions, 55u);
}

TEST(Snapshot, InvariantErrorShowsARecordInFlight) {
    LockClassPerf c = perf(10, 5, 2, 40);
    c.acquisitions += 1;  // the owner counted the acquisition, not yet its bucket
    EXPECT_EQ(wait_invariant_error(c), -1);
}

TEST(Snapshot, ClassNamesFallBackToTheId) {
    ClassNames n;
    n.names = {"sched", "", "alloc"};
    EXPECT_EQ(n.name(0), "sched");
    EXPECT_EQ(n.name(1), "class1");
    EXPECT_EQ(n.name(2), "alloc");
    EXPECT_EQ(n.name(9), "class9");
}

}  // namespace
}  // namespace spinlab::collect
