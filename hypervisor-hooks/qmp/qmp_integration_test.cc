// The QMP client against a real QEMU: query-cpus-fast's thread ids are the threads that
// /proc names "CPU <n>/TCG".
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/targets/thread_targets.h"
#include "hypervisor-hooks/testing/integration_support.h"
#include "qmp_client.h"

namespace spinlab::load {
namespace {

using namespace testing;

TEST(QmpWithQemu, VcpuThreadsAgreeWithProcNames) {
    const char* qemu = "/usr/bin/qemu-system-x86_64";
    if (::access(qemu, X_OK) != 0) GTEST_SKIP() << qemu << " is not installed";
    std::string dir = temp_dir();
    std::string sock = dir + "/qmp.sock";
    // -S: the vCPUs exist but never run; nothing to boot.
    ChildProcess vm({qemu, "-M", "q35", "-smp", "2", "-accel", "tcg,thread=multi", "-nodefaults",
                     "-display", "none", "-S", "-name", "qmptest,debug-threads=on", "-qmp",
                     "unix:" + sock + ",server=on,wait=off"});
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return path_exists(sock); })) << vm.stderr_text();
    std::vector<QmpCpu> cpus;
    ASSERT_TRUE(eventually(kEventuallyS, [&] {
        try {
            cpus = query_vcpus_over_qmp(sock);
            return true;
        } catch (const LoadError&) {
            return false;
        }
    }));
    ASSERT_EQ(cpus.size(), 2u);
    std::vector<ThreadTarget> by_name = vcpu_threads_by_name(vm.pid());
    ASSERT_EQ(by_name.size(), 2u);
    for (const QmpCpu& c : cpus) {
        auto it = std::find_if(by_name.begin(), by_name.end(), [&](const ThreadTarget& t) { return t.vcpu == c.cpu_index; });
        ASSERT_NE(it, by_name.end());
        EXPECT_EQ(it->tid, c.thread_id);
    }
    TargetSpec spec;
    spec.qmp_socket = sock;
    spec.vcpus = {1};
    std::vector<ThreadTarget> one = resolve_targets(spec);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].pid, vm.pid());
}

}  // namespace
}  // namespace spinlab::load
