// throttle really cuts a spinning thread's CPU time to its quota, and leaves nothing behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "fs_util.h"
#include "integration_support.h"
#include "thread_cgroup.h"

namespace spinlab::load {
namespace {

using namespace testing;

TEST(Throttle, SpinningThreadGetsItsQuota) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    try {
        choose_hierarchy_on_host("cpu", CgroupMethod::kAuto);
    } catch (const LoadError& e) {
        GTEST_SKIP() << e.what();
    }
    FakeVcpus vm(1);
    std::string dir = temp_dir();
    ChildProcess cli({SPINLAB_LOAD_BIN, "throttle", "--qemu-pid", std::to_string(vm.pid()), "--quota-pct", "20",
                      "--period-us", "50000", "--duration", "3", "--state-dir", dir + "/s", "--ready-file",
                      dir + "/ready"});
    ASSERT_TRUE(eventually(5, [&] { return path_exists(dir + "/ready"); })) << cli.stderr_text();
    const std::string stat = "/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(vm.tids()[0]) + "/stat";
    auto cpu_ticks = [&] {
        std::string s = read_file(stat);
        std::istringstream rest(s.substr(s.rfind(')') + 2));
        std::string f;
        unsigned long long sum = 0;
        for (int i = 3; rest >> f; ++i) {
            if (i == 14 || i == 15) sum += std::stoull(f);
            if (i == 15) break;
        }
        return sum;
    };
    unsigned long long before = cpu_ticks();
    ::usleep(2'000'000);
    double share = static_cast<double>(cpu_ticks() - before) / ::sysconf(_SC_CLK_TCK) / 2.0;
    EXPECT_NEAR(share, 0.20, 0.07) << "CPU share of a thread throttled to 20%";
    int status = cli.wait(5);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cli.stderr_text();
    EXPECT_TRUE(leftovers_of(cli.pid()).empty());
    EXPECT_EQ(read_file("/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(vm.tids()[0]) + "/cgroup"),
              read_file("/proc/self/cgroup"));
}

}  // namespace
}  // namespace spinlab::load
