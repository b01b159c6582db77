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
    EXPECT_EQ(j.rfind("{\"cpus\":2,\"acquisitions_counted\":\"every\",\"classes\":[{\"id\":2,\"name\":\"class2\",\"merged\":{"
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

// lock=pvqspin's counters on both CPUs of the seed snapshot.
Snapshot pv_snapshot() {
    Snapshot s = seed_snapshot();
    s.cpus[0].pv.pv_halts = 12;
    s.cpus[0].pv.pv_kicks = 3;
    s.cpus[0].pv.pv_spurious_wakeups = 1;
    s.cpus[1].pv.pv_kicks = 9;
    s.cpus[1].pv.pv_steals = 40000000000ull;
    return s;
}

TEST(ReportFormat, TableEndsWithThePvCountersPerCpuAndAll) {
    Snapshot s = pv_snapshot(), zero = seed_snapshot();
    ClassNames n;
    n.names = {"", "", "sched"};
    std::string t = format_query({&s, &n, {2}, false, ""}, OutputFormat::kTable);
    const std::string before = format_query({&zero, &n, {2}, false, ""}, OutputFormat::kTable);
    ASSERT_EQ(t.rfind(before, 0), 0u) << t;  // the class tables as without the counters
    EXPECT_EQ(t.substr(before.size()),
              "\n"
              "pv lock (lock=pvqspin)      pv_halts      pv_kicks  pv_spurious_wakeups     pv_steals\n"
              "CPU 0                             12             3                    1             0\n"
              "CPU 1                              0             9                    0   40000000000\n"
              "all 2 CPUs                        12            12                    1   40000000000\n");
    // Shown with no class to show as well: a guest whose halts are all it counted.
    std::string empty = format_query({&s, &n, {}, false, ""}, OutputFormat::kTable);
    EXPECT_EQ(empty.rfind("no lock acquisitions recorded\n\npv lock", 0), 0u) << empty;
}

TEST(ReportFormat, CsvEndsWithClasslessPvRowsForAllAndEachCpu) {
    Snapshot s = pv_snapshot(), zero = seed_snapshot();
    ClassNames n;
    n.names = {"", "", "sched"};
    std::string csv = format_query({&s, &n, {2}, false, ""}, OutputFormat::kCsv);
    const std::string before = format_query({&zero, &n, {2}, false, ""}, OutputFormat::kCsv);
    ASSERT_EQ(csv.rfind(before, 0), 0u) << csv;
    EXPECT_EQ(csv.substr(before.size()),
              "all,,,pv_halts,,12\n"
              "all,,,pv_kicks,,12\n"
              "all,,,pv_spurious_wakeups,,1\n"
              "all,,,pv_steals,,40000000000\n"
              "0,,,pv_halts,,12\n"
              "0,,,pv_kicks,,3\n"
              "0,,,pv_spurious_wakeups,,1\n"
              "0,,,pv_steals,,0\n"
              "1,,,pv_halts,,0\n"
              "1,,,pv_kicks,,9\n"
              "1,,,pv_spurious_wakeups,,0\n"
              "1,,,pv_steals,,40000000000\n");
}

TEST(ReportFormat, JsonEndsWithPvMergedAndPerCpuInTheRecordFilesFields) {
    Snapshot s = pv_snapshot(), zero = seed_snapshot();
    ClassNames n;
    std::string j = format_query({&s, &n, {2}, true, ""}, OutputFormat::kJson);
    std::string before = format_query({&zero, &n, {2}, true, ""}, OutputFormat::kJson);
    ASSERT_EQ(before.substr(before.size() - 2), "}\n");
    before.resize(before.size() - 2);  // the object, left open
    ASSERT_EQ(j.rfind(before, 0), 0u) << j;
    EXPECT_EQ(j.substr(before.size()),
              ",\"pv\":{\"merged\":{\"pv_halts\":12,\"pv_kicks\":12,\"pv_spurious_wakeups\":1,"
              "\"pv_steals\":40000000000},\"per_cpu\":["
              "{\"cpu\":0,\"pv_halts\":12,\"pv_kicks\":3,\"pv_spurious_wakeups\":1,\"pv_steals\":0},"
              "{\"cpu\":1,\"pv_halts\":0,\"pv_kicks\":9,\"pv_spurious_wakeups\":0,"
              "\"pv_steals\":40000000000}]}}\n");
    // The record files write a CPU's counters with the same writer (pv_fields).
    JsonWriter w;
    w.begin_object();
    pv_fields(w, s.cpus[1].pv);
    w.end_object();
    EXPECT_NE(j.find(w.take().substr(1, std::string::npos)), std::string::npos);
}

TEST(ReportFormat, NoFormatMentionsThePvLockWhenItsCountersAreZero) {
    Snapshot s = seed_snapshot();  // lock=tas or any lock but pvqspin: all four stay 0
    ClassNames n;
    for (OutputFormat f : {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kJson}) {
        for (bool per_cpu : {false, true}) {
            std::string out = format_query({&s, &n, {2}, per_cpu, ""}, f);
            EXPECT_EQ(out.find("pv"), std::string::npos) << out;
        }
        EXPECT_EQ(format_query({&s, &n, {}, false, ""}, f).find("pv"), std::string::npos);
    }
    EXPECT_EQ(format_query({&s, &n, {}, false, ""}, OutputFormat::kCsv),
              "cpu,class_id,class,metric,bucket,value\nall,,,acquisitions_counted,every,0\n");
    EXPECT_EQ(format_query({&s, &n, {}, false, ""}, OutputFormat::kJson),
              "{\"cpus\":2,\"acquisitions_counted\":\"every\",\"classes\":[]}\n");
}

// A Linux guest's probe sees slow-path waits only (acquisitions_counted = contended-only on
// every CPU): each format says so, and the table's % is of contended acquisitions.
TEST(ReportFormat, ContendedOnlyCountsAreSaidToBeSoInEveryFormat) {
    Snapshot s = seed_snapshot();
    for (CpuSnapshot& c : s.cpus) {
        c.acquisitions_counted = AcquisitionsCounted::kContendedOnly;
        for (LockClassPerf& k : c.classes) {
            k.acquisitions -= k.uncontended;
            k.uncontended = 0;
        }
    }
    ClassNames n;
    const std::string table = format_query({&s, &n, {2}, true, ""}, OutputFormat::kTable);
    EXPECT_EQ(table.find("all acquisitions"), std::string::npos) << table;
    EXPECT_EQ(table.find("uncontended"), std::string::npos) << table;
    size_t tables = 0;
    for (size_t p = 0; (p = table.find("%  of contended acquisitions only\n", p)) != std::string::npos; ++p)
        ++tables;
    EXPECT_EQ(tables, 3u) << table;  // merged, CPU 0, CPU 1
    EXPECT_NE(format_query({&s, &n, {2}, false, ""}, OutputFormat::kCsv)
                  .find("\nall,,,acquisitions_counted,contended-only,1\n"),
              std::string::npos);
    EXPECT_NE(format_query({&s, &n, {2}, false, ""}, OutputFormat::kJson)
                  .find("\"acquisitions_counted\":\"contended-only\""),
              std::string::npos);
    // One CPU that says so is enough for the merged table: its counts are in the sum.
    s.cpus[0].acquisitions_counted = AcquisitionsCounted::kEveryAcquisition;
    EXPECT_EQ(acquisitions_counted(s), AcquisitionsCounted::kContendedOnly);
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
