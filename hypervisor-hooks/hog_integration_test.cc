// Hogs really start, one per CPU, pinned; and none survives SIGTERM, SIGINT, the death of
// spinlab-load's parent, or a SIGKILL of spinlab-load itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "fs_util.h"
#include "hog.h"
#include "integration_support.h"
#include "pin.h"
#include "proc_info.h"

namespace spinlab::load {
namespace {

using namespace testing;

std::vector<std::string> hog_args(const std::string& state, const std::string& ready) {
    return {SPINLAB_LOAD_BIN, "hog", "--duty", "50", "--period-ms", "20", "--duration", "15",
            "--state-dir", state, "--ready-file", ready};
}

// Starts hogs; checks one per allowed CPU, each pinned to its own CPU; returns their pids.
std::vector<int> expect_hogs_running(ChildProcess& cli, const std::string& ready) {
    EXPECT_TRUE(eventually(5, [&] { return path_exists(ready); })) << cli.stderr_text();
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
    EXPECT_TRUE(eventually(3, [&] {
        for (int pid : hogs) {
            if (process_alive(pid)) return false;
        }
        return true;
    })) << "a hog outlived spinlab-load";
    EXPECT_TRUE(eventually(3, [&] { return !path_exists(state + "/spinlab-" + std::to_string(cli_pid) + "-ledger"); }))
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
    ASSERT_TRUE(eventually(5, [&] { return path_exists(dir + "/ready"); }));
    std::vector<int> cli = children_named(runner.pid(), "spinlab-load");
    ASSERT_EQ(cli.size(), 1u);
    std::vector<int> hogs = children_named(cli[0], "spinlab-hog");
    ASSERT_FALSE(hogs.empty());
    ::kill(runner.pid(), SIGKILL);
    runner.wait(5);
    EXPECT_TRUE(eventually(5, [&] { return !process_alive(cli[0]); })) << "spinlab-load outlived its parent";
    expect_all_gone(hogs, cli[0], dir + "/state");
}

TEST(Hog, DutyCycleLimitsCpuUse) {
    std::string dir = temp_dir();
    ChildProcess cli({SPINLAB_LOAD_BIN, "hog", "--cpus", "0", "--duty", "25", "--period-ms", "20",
                      "--duration", "3", "--state-dir", dir + "/state", "--ready-file", dir + "/ready"});
    ASSERT_TRUE(eventually(5, [&] { return path_exists(dir + "/ready"); }));
    std::vector<int> hogs = children_named(cli.pid(), "spinlab-hog");
    ASSERT_EQ(hogs.size(), 1u);
    auto cpu_ticks = [&] {
        std::string stat = read_file("/proc/" + std::to_string(hogs[0]) + "/stat");
        std::istringstream rest(stat.substr(stat.rfind(')') + 2));
        std::string f;
        uint64_t utime = 0, stime = 0;
        for (int i = 3; rest >> f; ++i) {
            if (i == 14) utime = std::stoull(f);
            if (i == 15) { stime = std::stoull(f); break; }
        }
        return utime + stime;
    };
    uint64_t before = cpu_ticks();
    ::usleep(2'000'000);
    double used = static_cast<double>(cpu_ticks() - before) / ::sysconf(_SC_CLK_TCK) / 2.0;
    EXPECT_NEAR(used, 0.25, 0.12) << "share of one CPU used by a 25% hog";
    cli.wait(5);
}

}  // namespace
}  // namespace spinlab::load
