// throttle really cuts a spinning thread's CPU time to its quota, and leaves nothing behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "hypervisor-hooks/cgroups/thread_cgroup.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/testing/integration_support.h"

namespace spinlab::load {
namespace {

using namespace testing;

// The quota the thread's cpu cgroup imposes: "QUOTA/PERIOD" (v1) or cpu.max's "QUOTA PERIOD" (v2).
std::string thread_cpu_quota(int pid, int tid) {
    std::istringstream lines(read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/cgroup"));
    std::string line;
    while (std::getline(lines, line)) {
        auto a = line.find(':'), b = line.find(':', a + 1);
        std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        std::istringstream list(controllers);
        for (std::string c; std::getline(list, c, ',');)
            if (c == "cpu") {
                std::string d = "/sys/fs/cgroup/" + controllers + path;
                auto trim = [](std::string t) { return t.substr(0, t.find_last_not_of(" \n") + 1); };
                return trim(read_file(d + "/cpu.cfs_quota_us")) + "/" + trim(read_file(d + "/cpu.cfs_period_us"));
            }
        if (controllers.empty() && path != "/")
            for (const char* root : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) try {
                    std::string v2 = read_file(root + path + "/cpu.max");
                    return v2.substr(0, v2.find_last_not_of(" \n") + 1);
                } catch (const LoadError&) {
                    // not mounted there, or no cpu controller in this group
                }
    }
    return "(no cpu cgroup)";
}

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
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return path_exists(dir + "/ready"); })) << cli.stderr_text();
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
    // The quota is in place on the thread's own cgroup (v1: cpu.cfs_quota_us, v2: cpu.max).
    std::string quota = thread_cpu_quota(vm.pid(), vm.tids()[0]);
    EXPECT_TRUE(quota == "10000 50000" || quota == "10000/50000") << "the thread's quota: " << quota;
    unsigned long long before = cpu_ticks();
    ::usleep(2'000'000);
    double share = static_cast<double>(cpu_ticks() - before) / ::sysconf(_SC_CLK_TCK) / 2.0;
    // Throttling promises an upper bound: 20 % of a CPU, plus up to a tick (4 ms) of overrun per
    // 50 ms period, so at most 28 %. The lower bound holds under load because the thread's cgroup
    // competes for the CPU as one entity beside the root group's tasks, not as one task among
    // all of them: on the 2-core build machine at load average ~21 it got 19.5-20.5 % (3 runs),
    // and 18.0-20.0 % with a `spinlab-load hog --cpus 0` added (3 runs). 13 % leaves room for a
    // busier host; below it the quota is not what limits the thread.
    std::printf("a thread throttled to 20%% ran %.1f%% of the time\n", share * 100);
    EXPECT_LE(share, 0.28) << "CPU share of a thread throttled to 20%";
    EXPECT_GE(share, 0.13) << "CPU share of a thread throttled to 20%";
    int status = cli.wait(5);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cli.stderr_text();
    EXPECT_TRUE(leftovers_of(cli.pid()).empty());
    EXPECT_EQ(read_file("/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(vm.tids()[0]) + "/cgroup"),
              read_file("/proc/self/cgroup"));
}

}  // namespace
}  // namespace spinlab::load
