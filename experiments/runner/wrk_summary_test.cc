// experiments/runner/wrk_summary_test.cc: the table spinlab-run prints at the end of a
// timing=all run, golden text (the same as analysis/spinlab_report/wrk_table.py's phase_text for
// these counts), and when a spec asks for it.
#include "wrk_summary.h"

#include <gtest/gtest.h>

namespace spinlab::run {
namespace {

// Two CPUs: CPU 0's class 3 with 100 acquisitions at 2^8 and 5 at 2^9, CPU 1's class 20 (a
// workload class) with 50 at 2^8 and one overflow.
collect::Snapshot two_cpus() {
    collect::Snapshot s;
    for (uint32_t cpu = 0; cpu < 2; cpu++) s.cpus.push_back(collect::empty_cpu(cpu));
    s.cpus[0].classes[3].wait_hist[8] = 100;
    s.cpus[0].classes[3].wait_hist[9] = 5;
    s.cpus[1].classes[20].wait_hist[8] = 50;
    s.cpus[1].classes[20].wait_overflow = 1;
    return s;
}

TEST(WrkSummary, MergesCpusClassesAndRepetitionsPerPhase) {
    WrkSummary w;
    w.add("idle-host", two_cpus());
    w.add("host-load", two_cpus());
    w.add("idle-host", two_cpus());
    EXPECT_EQ(w.text({"idle-host", "host-load", "freeze-10ms"}),
              "phase idle-host (2 repetitions, all CPUs and lock classes): 312 timed acquisitions; "
              "peak 2^8 with 96.15 %\n"
              "cycles       count       %\n"
              "2^ 7             0\n"
              "2^ 8           300   96.15\n"
              "2^ 9            10   03.21\n"
              "2^10             0\n"
              "overflow         2   00.64\n"
              "\n"
              "phase host-load (1 repetition, all CPUs and lock classes): 156 timed acquisitions; "
              "peak 2^8 with 96.15 %\n"
              "cycles       count       %\n"
              "2^ 7             0\n"
              "2^ 8           150   96.15\n"
              "2^ 9             5   03.21\n"
              "2^10             0\n"
              "overflow         1   00.64\n"
              "\n"
              "phase freeze-10ms: no repetition kept\n");
}

TEST(WrkSummary, AnEmptyPhaseHasNoPeak) {
    WrkSummary w;
    collect::Snapshot s;
    s.cpus.push_back(collect::empty_cpu(0));
    w.add("idle-host", s);
    EXPECT_EQ(w.text({"idle-host"}),
              "phase idle-host (1 repetition, all CPUs and lock classes): 0 timed acquisitions\n"
              "cycles       count       %\n");
    EXPECT_EQ(WrkSummary().text({}), "");
}

TEST(WrkSummary, TimingAllIsAWordOfTheKernelOptions) {
    Spec s;
    EXPECT_FALSE(timing_all(s));
    s.vm.append = "long-wait=1048576 timing=all";
    EXPECT_TRUE(timing_all(s));
    s.vm.append = "timing=contended";
    EXPECT_FALSE(timing_all(s));
    s.vm.append = "xtiming=all timing=allx";
    EXPECT_FALSE(timing_all(s));
}

// experiments/wrk.ini is the original experiment's setup: clock=cpuid, timing=all, 2 vCPUs, an
// idle host then a hog.
TEST(WrkSummary, TheWrkSpecAsksForIt) {
    const std::string path = std::string(SPINLAB_SOURCE_DIR) + "/experiments/wrk.ini";
    const char* argv[] = {"spinlab-run", "--spec", path.c_str()};
    ParsedSpec w = parse_spec(3, argv);
    EXPECT_TRUE(timing_all(w.spec));
    EXPECT_EQ(w.spec.vm.clock, "cpuid");
    EXPECT_EQ(w.spec.vm.cpus, 2u);
    ASSERT_EQ(w.spec.run.phases.size(), 2u);
    EXPECT_EQ(w.spec.run.phases[0].name(), "idle-host");
    EXPECT_EQ(w.spec.run.phases[1].name(), "host-load");
}

}  // namespace
}  // namespace spinlab::run
