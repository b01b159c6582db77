// `spinlab-load cleanup` removes what a dead owner left: a frozen thread in a cgroup (thawed and
// moved back), an empty cgroup, a trace instance; it leaves a live owner's resources alone.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/testing/integration_support.h"
#include "hypervisor-hooks/timeline/tracefs.h"
#include "ledger.h"

namespace spinlab::load {
namespace {

using namespace testing;

TEST(Cleanup, RemovesWhatADeadOwnerLeftAndThawsItsThreads) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    auto freezer = find_v1_mount(parse_cgroup_mounts(read_file("/proc/mounts")), "freezer");
    if (!freezer) GTEST_SKIP() << "no cgroup v1 freezer mounted";
    pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    FakeVcpus vm(1);
    const int tid = vm.tids()[0];
    // What a SIGKILLed owner without a guardian would leave: a frozen thread, no ledger.
    std::string cg = freezer->path + "/" + owned_name(dead, "freeze-" + std::to_string(tid));
    ASSERT_EQ(::mkdir(cg.c_str(), 0755), 0);
    write_file(cg + "/tasks", std::to_string(tid));
    write_file(cg + "/freezer.state", "FROZEN");
    std::string instance = ensure_tracefs() + "/instances/" + owned_name(dead, "timeline");
    ASSERT_EQ(::mkdir(instance.c_str(), 0755), 0);
    // A live owner's (ours) must survive.
    std::string mine = freezer->path + "/" + owned_name(::getpid(), "keep");
    ASSERT_EQ(::mkdir(mine.c_str(), 0755), 0);

    std::string dir = temp_dir();
    ChildProcess cli({SPINLAB_LOAD_BIN, "cleanup", "--state-dir", dir});
    int status = cli.wait(10);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cli.stderr_text();
    EXPECT_FALSE(path_exists(cg));
    EXPECT_FALSE(path_exists(instance));
    EXPECT_TRUE(path_exists(mine));
    EXPECT_NE(cli.stdout_text().find("removed " + cg), std::string::npos) << cli.stdout_text();
    std::string state = read_file("/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(tid) + "/stat");
    EXPECT_NE(state[state.rfind(')') + 2], 'D') << "thread still frozen";
    EXPECT_EQ(cgroup_of_task(read_file("/proc/" + std::to_string(vm.pid()) + "/task/" + std::to_string(tid) + "/cgroup"),
                             *freezer),
              "/");
    ::rmdir(mine.c_str());
}

TEST(Cleanup, NothingStaleSaysSo) {
    std::string dir = temp_dir();
    ChildProcess cli({SPINLAB_LOAD_BIN, "cleanup", "--state-dir", dir});
    cli.wait(10);
    EXPECT_NE(cli.stdout_text().find("nothing stale"), std::string::npos) << cli.stdout_text();
}

}  // namespace
}  // namespace spinlab::load
