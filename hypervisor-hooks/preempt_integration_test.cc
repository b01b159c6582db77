// preempt on a busy thread, traced by timeline at the same time: every recorded freeze window
// must show up as the thread being off CPU, and nothing may be left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fs_util.h"
#include "integration_support.h"
#include "proc_info.h"

namespace spinlab::load {
namespace {

using namespace testing;

uint64_t u64(const std::map<std::string, std::string>& row, const char* key) {
    return std::stoull(row.at(key));
}

// On-CPU time of the thread inside [from, to) (TSC), from the timeline intervals.
uint64_t on_time(const std::vector<std::map<std::string, std::string>>& timeline, uint64_t from, uint64_t to) {
    uint64_t total = 0;
    for (const auto& r : timeline) {
        if (r.at("state") != "on") continue;
        uint64_t s = std::max(u64(r, "start_tsc"), from), e = std::min(u64(r, "end_tsc"), to);
        if (e > s) total += e - s;
    }
    return total;
}

void run_and_match(const std::string& cgroup) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    FakeVcpus vm(1);
    std::string dir = temp_dir();
    ChildProcess timeline({SPINLAB_LOAD_BIN, "timeline", "--qemu-pid", std::to_string(vm.pid()),
                           "--duration", "20", "--out", dir + "/timeline.csv", "--state-dir", dir + "/s",
                           "--ready-file", dir + "/timeline.ready"});
    ASSERT_TRUE(eventually(5, [&] { return path_exists(dir + "/timeline.ready"); })) << timeline.stderr_text();
    ChildProcess preempt({SPINLAB_LOAD_BIN, "preempt", "--qemu-pid", std::to_string(vm.pid()),
                          "--freeze-ms", "20", "--period-ms", "150", "--duration", "2.5", "--cgroup", cgroup,
                          "--rt-priority", "10", "--out", dir + "/preempt.csv", "--state-dir", dir + "/s"});
    int ps = preempt.wait(10);
    // The trace window must cover every freeze however slowly preempt started: stop the
    // timeline only now, with SIGINT (its Ctrl-C path writes the CSV too).
    ::usleep(200'000);
    ::kill(timeline.pid(), SIGINT);
    int ts = timeline.wait(10);
    ASSERT_TRUE(WIFEXITED(ps) && WEXITSTATUS(ps) == 0) << preempt.stderr_text();
    ASSERT_TRUE(WIFEXITED(ts) && WEXITSTATUS(ts) == 0) << timeline.stderr_text();
    auto freezes = parse_csv(slurp(dir + "/preempt.csv"));
    auto intervals = parse_csv(slurp(dir + "/timeline.csv"));
    ASSERT_GE(freezes.size(), 14u) << "2.5 s at one freeze per 150 ms";
    ASSERT_FALSE(intervals.empty());
    // TSC ticks per ms, from the preempt record's two clocks.
    // Over the whole run (first begin to last end), not one 20 ms window: far less noise.
    const auto& f0 = freezes.front();
    const auto& fn = freezes.back();
    double ticks_per_ms = static_cast<double>(u64(fn, "end_tsc") - u64(f0, "begin_tsc")) /
                          (static_cast<double>(u64(fn, "end_ns") - u64(f0, "begin_ns")) / 1e6);
    const uint64_t settle = static_cast<uint64_t>(2 * ticks_per_ms);  // freeze takes effect
    // Hard rule for every window: the thread never runs while frozen. Timing rules allow for a loaded 2-CPU host (other builds run beside the tests):
    // 90% of windows within 3 ms of the planned 20 ms, all within [19, 30] ms.
    size_t on_length = 0, confirmed = 0;
    for (const auto& f : freezes) {
        uint64_t begin = u64(f, "begin_tsc"), end = u64(f, "end_tsc");
        // Length from the monotonic clock: ticks_per_ms comes from one short window and was
        // off by ~7 % once in CI (an 18.7 ms "window" that the ns clock put at 20).
        double length_ms = static_cast<double>(u64(f, "end_ns") - u64(f, "begin_ns")) / 1e6;
        EXPECT_GE(length_ms, 19.0) << "seq " << f.at("seq");
        EXPECT_LE(length_ms, 30.0) << "seq " << f.at("seq");
        on_length += std::abs(length_ms - 20.0) <= 3.0;
        double ran_ms = on_time(intervals, begin + settle, end) / ticks_per_ms;
        EXPECT_LT(ran_ms, 0.5) << "seq " << f.at("seq") << " ran while frozen";
        confirmed += u64(f, "frozen_ns") != 0;
    }
    // The kernel confirms a freeze only once the thread has stopped in the freezer; a thread that
    // is waiting for a CPU (loaded host) or a window cut short by the end may never get there.
    // The v1 freezer confirms only at the thread's next tick (README): a weaker bar there.
    const size_t tenths = cgroup == "v2" ? 8 : 5;
    EXPECT_GE(confirmed * 10, freezes.size() * tenths) << "freezes the kernel reported complete";
    EXPECT_GE(on_length * 10, freezes.size() * 9) << "freeze lengths off plan";
    // Between freezes the spinning thread runs again (in nearly every gap, even when loaded).
    size_t ran_between = 0;
    for (size_t i = 0; i + 1 < freezes.size(); ++i) {
        uint64_t gap_from = u64(freezes[i], "end_tsc"), gap_to = u64(freezes[i + 1], "begin_tsc");
        ran_between += on_time(intervals, gap_from, gap_to) > (gap_to - gap_from) / 100;
    }
    // Known weakness (issue notes): with other tests loading the 2 host CPUs the spinning
    // thread was seen running in as few as 7 of 16 gaps (v2) and 3 of 16 (v1), though never
    // while frozen. Whether the thread or the timeline is late is not settled; until it is, the
    // bar is that it runs again in a quarter of the gaps (v2) or in some gap (v1).
    if (cgroup == "v2")
        EXPECT_GE(ran_between * 4, freezes.size() - 1) << "thread did not run again after thaws";
    else
        EXPECT_GE(ran_between, 1u) << "thread did not run again after thaws";
    EXPECT_TRUE(leftovers_of(preempt.pid()).empty());
    EXPECT_TRUE(leftovers_of(timeline.pid()).empty());
    // The process is back in its original cgroups.
    EXPECT_EQ(read_file("/proc/" + std::to_string(vm.pid()) + "/cgroup"),
              read_file("/proc/self/cgroup"));
}

TEST(Preempt, FreezeWindowsMatchTimelineV2) { run_and_match("v2"); }
TEST(Preempt, FreezeWindowsMatchTimelineV1) { run_and_match("v1"); }

// A long freeze interrupted by SIGINT or SIGKILL: the thread must run again at once.
class PreemptKilled : public ::testing::TestWithParam<int> {};

TEST_P(PreemptKilled, ThreadIsThawedAndNothingLeft) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    FakeVcpus vm(1);
    std::string dir = temp_dir();
    ChildProcess preempt({SPINLAB_LOAD_BIN, "preempt", "--qemu-pid", std::to_string(vm.pid()), "--freeze-ms",
                          "5000", "--period-ms", "6000", "--state-dir", dir + "/s", "--out", dir + "/p.csv"});
    const std::string stat = "/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(vm.tids()[0]) + "/stat";
    auto cpu_ticks = [&] {
        std::string s = read_file(stat);
        std::istringstream rest(s.substr(s.rfind(')') + 2));
        std::string f;
        for (int i = 3; rest >> f; ++i) {
            if (i == 14) return std::stoull(f);
        }
        return 0ull;
    };
    ASSERT_TRUE(eventually(5, [&] { return !leftovers_of(preempt.pid()).empty(); }));
    ::usleep(300'000);
    unsigned long long frozen_at = cpu_ticks();
    ::usleep(300'000);
    ASSERT_EQ(cpu_ticks(), frozen_at) << "the thread still runs: not frozen";
    ::kill(preempt.pid(), GetParam());
    preempt.wait(5);
    EXPECT_TRUE(eventually(3, [&] { return leftovers_of(preempt.pid()).empty(); }));
    EXPECT_TRUE(eventually(3, [&] { return cpu_ticks() > frozen_at + 5; })) << "the thread stayed frozen";
    EXPECT_EQ(read_file("/proc/" + std::to_string(vm.pid()) + "/cgroup"), read_file("/proc/self/cgroup"));
    EXPECT_FALSE(path_exists(dir + "/s/spinlab-" + std::to_string(preempt.pid()) + "-ledger"));
}

INSTANTIATE_TEST_SUITE_P(Signals, PreemptKilled, ::testing::Values(SIGINT, SIGKILL));

}  // namespace
}  // namespace spinlab::load
