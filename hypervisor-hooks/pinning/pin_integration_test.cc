// pin puts vCPU i on CPU i, found by thread name, as the runner uses it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "hypervisor-hooks/hogs/hog.h"
#include "hypervisor-hooks/testing/integration_support.h"
#include "pin.h"

namespace spinlab::load {
namespace {

using namespace testing;

TEST(Pin, VcpuThreadsGoToTheirCpus) {
    std::vector<int> cpus = allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs, have " << cpus.size();
    FakeVcpus vm(2, /*idle=*/true);
    ChildProcess cli({SPINLAB_LOAD_BIN, "pin", "--qemu-pid", std::to_string(vm.pid()), "--cpus",
                      std::to_string(cpus[1]) + "," + std::to_string(cpus[0])});
    int status = cli.wait(5);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cli.stderr_text();
    // --cpus is a set (sorted): vCPU 0 -> lowest CPU.
    EXPECT_EQ(thread_affinity(vm.tids()[0]), std::vector<int>{cpus[0]});
    EXPECT_EQ(thread_affinity(vm.tids()[1]), std::vector<int>{cpus[1]});
    EXPECT_NE(cli.stdout_text().find("tid vcpu cpus"), std::string::npos);
}

TEST(Pin, UnknownVcpuIsAnErrorNamingIt) {
    FakeVcpus vm(1, /*idle=*/true);
    ChildProcess cli({SPINLAB_LOAD_BIN, "pin", "--qemu-pid", std::to_string(vm.pid()), "--vcpus", "3", "--cpus", "0"});
    int status = cli.wait(5);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    EXPECT_NE(cli.stderr_text().find("--vcpus 3: no such vCPU (found 0)"), std::string::npos) << cli.stderr_text();
}

}  // namespace
}  // namespace spinlab::load
