// Output formats: the table (golden, the original WRK experiment's numbers), csv rows and json
// structure.
#include "report_format.h"

#include <gtest/gtest.h>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

// The original experiment's measurement ("Measuring Spin-Locks", on the Windows Research Kernel,
// docs/architecture.md): 2^7 135, 2^8 67749, 2^9 1200, 2^10 3, 2^11 1.
LockClassPerf wrk_class() {
    LockClassPerf c{};
    c.wait_hist[7] = 135;
    c.wait_hist[8] = 67749;
    c.wait_hist[9] = 1200;
    c.wait_hist[10] = 3;
    c.wait_hist[11] = 1;
    c.acquisitions = 135 + 67749 + 1200 + 3 + 1;
    c.holds_timed = 20;
    c.hold_hist[8] = 19;
    c.hold_hist[12] = 1;
    c.hold_cycles_max = 4100;
    c.lhp_count[uint32_t(LhpClass::kUnknown)] = c.acquisitions;
    c.lhp_cycles[uint32_t(LhpClass::kUnknown)] = 17000000;
    return c;
}

TEST(ReportFormat, ClassTableIsTheWaitTableThenHoldsThenLhpClasses) {
    const char* golden =
        "wait\n"
        "cycles               count       %  of all acquisitions\n"
        "2^7                    135    0.20\n"
        "2^8                  67749   98.06\n"
        "2^9                   1200    1.74\n"
        "2^10                     3    0.00\n"
        "2^11                     1    0.00\n"
        "overflow                 0    0.00\n"
        "uncontended              0    0.00\n"
        "hold\n"
        "cycles               count       %  of timed holds\n"
        "2^8                     19   95.00\n"
        "2^9                      0    0.00\n"
        "2^10                     0    0.00\n"
        "2^11                     0    0.00\n"
        "2^12                     1    5.00\n"
        "overflow                 0    0.00\n"
        "lhp class                count       %         cycles\n"
        "neither                     0    0.00              0\n"
        "holder-preempted            0    0.00              0\n"
        "waiter-preempted            0    0.00              0\n"
        "both                        0    0.00              0\n"
        "unknown                 69088  100.00       17000000\n";
    EXPECT_EQ(class_table(wrk_class()), golden);
}

Snapshot seed_snapshot() {
    Snapshot s;
    s.cpus = {empty_cpu(0), empty_cpu(1)};
    s.cpus[0].classes[2] = wrk_class();
    s.cpus[1].classes[2].acquisitions = 4;
    s.cpus[1].classes[2].uncontended = 4;
    return s;
}

TEST(ReportFormat, TableHeadsEachClassWithItsNameAndTotal) {
    Snapshot s = seed_snapshot();
    ClassNames n;
    n.names = {"", "", "sched"};
    std::string t = format_query({&s, &n, {2}, true, "title"}, OutputFormat::kTable);
    EXPECT_EQ(t.rfind("title\n\nlock class sched (id 2), all 2 CPUs: 69092 acquisitions\nwait\n", 0),
              0u)
        << t;
    EXPECT_NE(t.find("lock class sched (id 2), CPU 1: 4 acquisitions\n"), std::string::npos);
    EXPECT_NE(t.find("uncontended              4  100.00\n"), std::string::npos) << t;
}

TEST(ReportFormat, TableSaysSoWhenNothingWasRecorded) {
    Snapshot s;
    s.cpus = {empty_cpu(0)};
    ClassNames n;
    EXPECT_EQ(format_query({&s, &n, {}, false, ""}, OutputFormat::kTable),
              "no lock acquisitions recorded\n");
}

TEST(ReportFormat, CsvHasOneTidyRowPerNumber) {
    Snapshot s = seed_snapshot();
    ClassNames n;
    n.names = {"", "", "sched"};
    std::string csv = format_query({&s, &n, {2}, true, ""}, OutputFormat::kCsv);
    EXPECT_EQ(csv.rfind("cpu,class_id,class,metric,bucket,value\n", 0), 0u);
    EXPECT_NE(csv.find("\nall,2,sched,acquisitions,,69092\n"), std::string::npos);
    EXPECT_NE(csv.find("\nall,2,sched,wait_hist,8,67749\n"), std::string::npos);
    EXPECT_NE(csv.find("\n0,2,sched,hold_hist,12,1\n"), std::string::npos);
    EXPECT_NE(csv.find("\nall,2,sched,lhp_count,unknown,69088\n"), std::string::npos);
    EXPECT_NE(csv.find("\n1,2,sched,uncontended,,4\n"), std::string::npos);
    EXPECT_EQ(csv.find("wait_hist,6,"), std::string::npos);  // empty buckets are left out
}

TEST(ReportFormat, JsonNestsMergedAndPerCpuPerfWithSparseHistograms) {
    Snapshot s = seed_snapshot();
    ClassNames n;
    std::string j = format_query({&s, &n, {2}, true, ""}, OutputFormat::kJson);
    EXPECT_EQ(j.rfind("{\"cpus\":2,\"classes\":[{\"id\":2,\"name\":\"class2\",\"merged\":{"
                      "\"acquisitions\":69092,",
                      0),
              0u)
        << j;
    EXPECT_NE(j.find("\"wait_hist\":{\"7\":135,\"8\":67749,\"9\":1200,\"10\":3,\"11\":1}"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("\"per_cpu\":[{\"cpu\":0,\"perf\":{"), std::string::npos);
    EXPECT_NE(j.find("\"unknown\":{\"count\":69088,\"cycles\":17000000}"), std::string::npos);
    EXPECT_EQ(j.back(), '\n');
}

TEST(ReportFormat, ParseFormatNamesTheBadValue) {
    EXPECT_EQ(parse_format("csv"), OutputFormat::kCsv);
    try {
        parse_format("xml");
        FAIL();
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitUsage);
        EXPECT_NE(std::string(e.what()).find("'xml'"), std::string::npos);
    }
}

}  // namespace
}  // namespace spinlab::collect
