// experiments/soak/invariant_check_test.cc: which readings are checked, and what is a violation.
#include "invariant_check.h"

#include <gtest/gtest.h>

namespace spinlab::soak {
namespace {

constexpr uint32_t kKernel = 3, kOther = 4, kWorkload = 16;

// A record of n acquisitions, consistent unless `missing` bucket increments are lost.
LockClassPerf record(uint64_t n, uint64_t missing = 0) {
    LockClassPerf c{};
    c.acquisitions = n;
    c.uncontended = n / 2;
    c.wait_hist[5] = n - n / 2 - missing;
    c.holds_timed = n / 4;
    c.hold_hist[9] = n / 4;
    return c;
}

collect::Snapshot reading(const LockClassPerf& kernel, uint64_t other, const LockClassPerf& workload,
                          uint64_t resets = 0) {
    collect::Snapshot s;
    s.cpus.push_back(collect::empty_cpu(0));
    s.cpus[0].resets = resets;
    s.cpus[0].classes[kKernel] = kernel;
    s.cpus[0].classes[kOther] = record(other);
    s.cpus[0].classes[kWorkload] = workload;
    return s;
}

InvariantChecker checker() {
    std::vector<bool> workload(kMaxLockClasses);
    workload[kWorkload] = true;
    return InvariantChecker(workload, {});
}

TEST(InvariantError, NamesTheBrokenInvariant) {
    EXPECT_EQ(invariant_error(record(10)), "");
    EXPECT_NE(invariant_error(record(10, 1)).find("acquisitions = 10"), std::string::npos);
    LockClassPerf h = record(8);
    h.hold_overflow = 1;
    EXPECT_NE(invariant_error(h).find("holds timed = 2"), std::string::npos);
    LockClassPerf o = record(8, 1);
    o.wait_overflow = 1;  // an unmeasurable wait is counted, not lost
    EXPECT_EQ(invariant_error(o), "");
}

TEST(InvariantChecker, KernelRecordUnchangedWhileItsCpuRanIsCheckedOnce) {
    InvariantChecker c = checker();
    const LockClassPerf w = record(0);
    EXPECT_EQ(c.add(reading(record(10), 100, w), false).checks, 0u);
    EXPECT_EQ(c.add(reading(record(10), 110, w), false).checks, 0u);  // two readings are not enough
    CheckResult r = c.add(reading(record(10), 120, w), false);
    EXPECT_EQ(r.checks, 1u);  // class 3; class 4 moved, and unused classes are not counted
    EXPECT_TRUE(r.violations.empty());
    EXPECT_EQ(c.add(reading(record(10), 130, w), false).checks, 0u);  // this state was checked
}

TEST(InvariantChecker, BrokenQuiescentKernelRecordIsAViolation) {
    InvariantChecker c = checker();
    const LockClassPerf w = record(0);
    c.add(reading(record(10, 1), 100, w), false);
    c.add(reading(record(10, 1), 110, w), false);
    CheckResult r = c.add(reading(record(10, 1), 120, w), false);
    ASSERT_EQ(r.violations.size(), 1u);
    EXPECT_NE(r.violations[0].find("cpu 0 class 3"), std::string::npos);
    // The same state is not reported again.
    EXPECT_TRUE(c.add(reading(record(10, 1), 130, w), false).violations.empty());
}

TEST(InvariantChecker, NoProgressOrAMovingRecordOrAResetMeansNoCheck) {
    const LockClassPerf w = record(0);
    {  // a stalled vCPU: the half-done record may stay half done
        InvariantChecker c = checker();
        c.add(reading(record(10, 1), 100, w), false);
        c.add(reading(record(10, 1), 100, w), false);
        EXPECT_EQ(c.add(reading(record(10, 1), 110, w), false).checks, 0u);
    }
    {  // a record in flight in one of the readings
        InvariantChecker c = checker();
        c.add(reading(record(10), 100, w), false);
        c.add(reading(record(11, 1), 110, w), false);
        EXPECT_EQ(c.add(reading(record(11, 1), 120, w), false).checks, 0u);
    }
    {  // the counters were reset in between
        InvariantChecker c = checker();
        c.add(reading(record(10, 1), 100, w, 0), false);
        c.add(reading(record(10, 1), 110, w, 1), false);
        EXPECT_EQ(c.add(reading(record(10, 1), 120, w, 1), false).checks, 0u);
    }
}

TEST(InvariantChecker, WorkloadClassesOnlyWhileNoWorkloadThreadExists) {
    InvariantChecker c = checker();
    const LockClassPerf k = record(0);
    // Written from ring 3: even an unchanged record proves nothing while a thread exists.
    EXPECT_EQ(c.add(reading(k, 100, record(50, 2)), false).checks, 0u);
    EXPECT_EQ(c.add(reading(k, 110, record(50, 2)), false).checks, 0u);
    EXPECT_EQ(c.add(reading(k, 120, record(50, 2)), false).checks, 0u);
    CheckResult r = c.add(reading(k, 130, record(50, 2)), true);
    EXPECT_EQ(r.checks, 1u);
    ASSERT_EQ(r.violations.size(), 1u);
    EXPECT_NE(r.violations[0].find("class 16"), std::string::npos);
    EXPECT_EQ(c.add(reading(k, 140, record(60)), true).violations.size(), 0u);
}

}  // namespace
}  // namespace spinlab::soak
