// The libvirt hook script as libvirt calls it: "started begin" with a domain XML that asks for a
// hog and a pin starts them detached; "stopped end" stops them and nothing is left.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/testing/integration_support.h"

namespace spinlab::load {
namespace {

using namespace testing;

int run_hook(const std::string& dir, const std::string& op, const std::string& sub, const std::string& xml,
             const std::string& redirect = "") {
    std::ofstream(dir + "/domain.xml") << xml;
    std::string cmd = "SPINLAB_LOAD=" SPINLAB_LOAD_BIN " SPINLAB_LIBVIRT_RUN_DIR=" + dir +
                      " SPINLAB_HOOK_STATE_DIR=" + dir + "/state SPINLAB_HOOK_LOG_DIR=" + dir +
                      "/log " SPINLAB_LIBVIRT_HOOK " lab " + op + " " + sub + " - < " + dir + "/domain.xml " + redirect;
    return std::system(cmd.c_str());
}

TEST(LibvirtHook, StartsAndStopsTheLoadsTheDomainAsksFor) {
    FakeVcpus vm(1, /*idle=*/true);
    std::string dir = temp_dir();
    std::ofstream(dir + "/lab.pid") << vm.pid() << "\n";
    std::string xml =
        "<domain type='qemu'><name>lab</name><metadata>"
        "<spinlab:load xmlns:spinlab='https://spinlab.invalid/xmlns/load/1'>"
        "<hog cpus='0' duty='10' period-ms='50'/><pin cpus='0'/>"
        "</spinlab:load></metadata></domain>";
    EXPECT_EQ(run_hook(dir, "prepare", "begin", xml), 0);
    EXPECT_EQ(run_hook(dir, "started", "begin", xml), 0);
    std::string pids = slurp(dir + "/state/lab.pids");
    std::istringstream in(pids);
    int hog_cli = 0;
    in >> hog_cli;
    ASSERT_GT(hog_cli, 0) << pids;
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return children_named(hog_cli, "spinlab-hog").size() == 1; }))
        << slurp(dir + "/log/lab.log");
    std::vector<int> hogs = children_named(hog_cli, "spinlab-hog");
    EXPECT_EQ(run_hook(dir, "stopped", "end", xml), 0);
    EXPECT_TRUE(eventually(kEventuallyS, [&] { return !process_alive(hog_cli) && !process_alive(hogs[0]); }));
    EXPECT_FALSE(path_exists(dir + "/state/lab.pids"));
    EXPECT_NE(slurp(dir + "/log/lab.log").find("hog: stopped by"), std::string::npos);
}

TEST(LibvirtHook, BadMetadataFailsPrepareWithTheReason) {
    std::string dir = temp_dir();
    std::string xml =
        "<domain><name>lab</name><metadata><s:load xmlns:s='https://spinlab.invalid/xmlns/load/1'>"
        "<freeze freeze-ms='500'/></s:load></metadata></domain>";
    int status = run_hook(dir, "prepare", "begin", xml, "2>" + dir + "/err");
    EXPECT_NE(WEXITSTATUS(status), 0);
    EXPECT_NE(slurp(dir + "/err").find("--freeze-ms must be shorter"), std::string::npos);
}

TEST(LibvirtHook, DomainsWithoutMetadataAreLeftAlone) {
    std::string dir = temp_dir();
    EXPECT_EQ(run_hook(dir, "prepare", "begin", "<domain><name>x</name></domain>"), 0);
    EXPECT_EQ(run_hook(dir, "stopped", "end", "<domain><name>x</name></domain>"), 0);
}

}  // namespace
}  // namespace spinlab::load
