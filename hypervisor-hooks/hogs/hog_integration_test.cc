// Hogs really start, one per CPU, pinned; and none survives SIGTERM, SIGINT, the death of
// spinlab-load's parent, or a SIGKILL of spinlab-load itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "hog.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/pinning/pin.h"
#include "hypervisor-hooks/testing/integration_support.h"

namespace spinlab::load {
namespace {

using namespace testing;

std::vector<std::string> hog_args(const std::string& state, const std::string& ready) {
    return {SPINLAB_LOAD_BIN, "hog", "--duty", "50", "--period-ms", "20", "--duration", "15",
            "--state-dir", state, "--ready-file", ready};
}

// Starts hogs; checks one per allowed CPU, each pinned to its own CPU; returns their pids.
std::vector<int> expect_hogs_running(ChildProcess& cli, const std::string& ready) {
    EXPECT_TRUE(eventually(kEventuallyS, [&] { return path_exists(ready); })) << cli.stderr_text();
    std::vector<int> hogs = children_named(cli.pid(), "spinlab-hog");
    std::vector<int> cpus = allowed_cpus();
    EXPECT_EQ(hogs.size(), cpus.size());
    std::vector<int> pinned;
    for (int pid : hogs) {
        std::vector<int> affinity = thread_affinity(pid);
        EXPECT_EQ(affinity.size(), 1u) << "hog " << pid << " is not pinned";
        if (!affinity.empty()) pinned.push_back(affinity[0]);
    }
    std::sort(pinned.begin(), pinned.end());
    EXPECT_EQ(pinned, cpus) << "one hog per CPU";
    return hogs;
}

void expect_all_gone(const std::vector<int>& hogs, int cli_pid, const std::string& state) {
    EXPECT_TRUE(eventually(kEventuallyS, [&] {
        for (int pid : hogs) {
            if (process_alive(pid)) return false;
        }
        return true;
    })) << "a hog outlived spinlab-load";
    EXPECT_TRUE(eventually(kEventuallyS, [&] { return !path_exists(state + "/spinlab-" + std::to_string(cli_pid) + "-ledger"); }))
        << "the ledger was not removed";
    EXPECT_TRUE(leftovers_of(cli_pid).empty());
}

class HogSignal : public ::testing::TestWithParam<int> {};

TEST_P(HogSignal, StopsCleanlyOnSignal) {
    std::string dir = temp_dir();
    ChildProcess cli(hog_args(dir + "/state", dir + "/ready"));
    std::vector<int> hogs = expect_hogs_running(cli, dir + "/ready");
    ASSERT_FALSE(hogs.empty());
    ::kill(cli.pid(), GetParam());
    int status = cli.wait(5);
    ASSERT_NE(status, -1) << "spinlab-load did not exit";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cli.stderr_text();
    EXPECT_NE(cli.stderr_text().find("hog: stopped by"), std::string::npos) << cli.stderr_text();
    expect_all_gone(hogs, cli.pid(), dir + "/state");
    EXPECT_FALSE(path_exists(dir + "/ready")) << "the ready file is removed at exit";
}

INSTANTIATE_TEST_SUITE_P(Signals, HogSignal, ::testing::Values(SIGTERM, SIGINT));

TEST(Hog, HogsDieWhenSpinlabLoadIsSigkilled) {
    std::string dir = temp_dir();
    ChildProcess cli(hog_args(dir + "/state", dir + "/ready"));
    std::vector<int> hogs = expect_hogs_running(cli, dir + "/ready");
    ASSERT_FALSE(hogs.empty());
    ::kill(cli.pid(), SIGKILL);
    cli.wait(5);
    expect_all_gone(hogs, cli.pid(), dir + "/state");
}

TEST(Hog, StopsWhenItsParentDies) {
    std::string dir = temp_dir();
    // A shell between us and spinlab-load plays the runner; SIGKILL it.
    std::string cmd;
    for (const std::string& a : hog_args(dir + "/state", dir + "/ready")) cmd += "'" + a + "' ";
    ChildProcess runner({"/bin/sh", "-c", cmd + "; true"});
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return path_exists(dir + "/ready"); }));
    std::vector<int> cli = children_named(runner.pid(), "spinlab-load");
    ASSERT_EQ(cli.size(), 1u);
    std::vector<int> hogs = children_named(cli[0], "spinlab-hog");
    ASSERT_FALSE(hogs.empty());
    ::kill(runner.pid(), SIGKILL);
    runner.wait(5);
    EXPECT_TRUE(eventually(kEventuallyS, [&] { return !process_alive(cli[0]); })) << "spinlab-load outlived its parent";
    expect_all_gone(hogs, cli[0], dir + "/state");
}

// /proc/PID/schedstat: nanoseconds on a CPU and nanoseconds runnable but waiting for one.
std::pair<uint64_t, uint64_t> run_and_wait_ns(int pid) {
    std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/schedstat"));
    uint64_t run = 0, wait = 0;
    in >> run >> wait;
    return {run, wait};
}

// Nanoseconds the hypervisor under this machine took from CPU `cpu` (steal, /proc/stat): a
// task's schedstat run time leaves them out, so a hog on that CPU runs less than it asked for.
uint64_t steal_ns(int cpu) {
    std::istringstream in(read_file("/proc/stat"));
    const std::string want = "cpu" + std::to_string(cpu);
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string name;
        uint64_t v[8] = {};
        fields >> name;
        if (name != want) continue;
        for (uint64_t& x : v) fields >> x;
        return v[7] * (1'000'000'000ull / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
    }
    return 0;
}

// A 25 % hog runs at most 25 % of the time, and wants the CPU (runs or waits for it) at least
// 25 % of the time. Both hold whatever else the host runs, which is why the test measures them
// rather than CPU time alone. Measured on the 2-core build machine (load average ~21 from the
// team's builds and VMs), 3 runs each: alone, it ran 7.0-11.1 % and was runnable 35.0-35.5 %;
// with a `spinlab-load hog --cpus 0` beside it, it ran 4.1-4.8 % and was runnable 64.5-72.1 %
// (a hog preempted at the end of its busy window stays runnable until it runs again). The old
// bar, 25 % +- 12 % of CPU time, failed twice so in these runs (9 % and 10 %).
// Tolerance: 3 % of the time either way, for the period edges (100 periods of 20 ms: a late
// wake-up shortens a busy window). When this machine is itself a VM, its hypervisor's steal on
// the hog's CPU counts as wanting the CPU: CI's run had no waits but 21.5 % run (runnable 0.215
// without steal), the hog's busy window ending on the clock while its vCPU was away.
TEST(Hog, DutyCycleLimitsCpuUse) {
    std::string dir = temp_dir();
    ChildProcess cli({SPINLAB_LOAD_BIN, "hog", "--cpus", "0", "--duty", "25", "--period-ms", "20",
                      "--duration", "30", "--state-dir", dir + "/state", "--ready-file", dir + "/ready"});
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return path_exists(dir + "/ready"); }));
    std::vector<int> hogs = children_named(cli.pid(), "spinlab-hog");
    ASSERT_EQ(hogs.size(), 1u);
    auto [run0, wait0] = run_and_wait_ns(hogs[0]);
    const uint64_t steal0 = steal_ns(0);
    auto t0 = std::chrono::steady_clock::now();
    ::usleep(2'000'000);
    auto [run1, wait1] = run_and_wait_ns(hogs[0]);
    const uint64_t steal1 = steal_ns(0);
    double elapsed = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    double ran = double(run1 - run0) / elapsed, runnable = double(run1 - run0 + wait1 - wait0) / elapsed;
    double stolen = double(steal1 - steal0) / elapsed;
    std::printf("a 25%% hog ran %.1f%% and was runnable %.1f%% of the time; CPU 0 was stolen %.1f%%\n",
                ran * 100, runnable * 100, stolen * 100);
    EXPECT_LE(ran, 0.28) << "share of the time a 25% hog ran";
    EXPECT_GE(runnable + stolen, 0.22) << "share of the time a 25% hog ran, waited to run, or its CPU was stolen";
    ::kill(cli.pid(), SIGTERM);
    cli.wait(kEventuallyS);
}

}  // namespace
}  // namespace spinlab::load
