#include "cgroup_paths.h"

#include <gtest/gtest.h>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

// As on the machines this project is tested on: v1 cpu, cpuset, freezer, and a v2 hierarchy.
const char* kMounts =
    "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
    "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n"
    "cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n"
    "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,xattr,name=systemd 0 0\n"
    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    "tracefs /sys/kernel/tracing tracefs rw,relatime 0 0\n";

TEST(CgroupMounts, ParsesV1ControllersAndTheV2Mount) {
    std::vector<CgroupMount> m = parse_cgroup_mounts(kMounts);
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[0].path, "/sys/fs/cgroup/cpu");
    EXPECT_EQ(m[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
    EXPECT_TRUE(m[3].controllers.empty()) << "name=systemd is not a controller";
    EXPECT_EQ(find_v1_mount(m, "freezer")->path, "/sys/fs/cgroup/freezer");
    EXPECT_EQ(find_v1_mount(m, "cpu")->path, "/sys/fs/cgroup/cpu");
    EXPECT_FALSE(find_v1_mount(m, "memory"));
    EXPECT_EQ(find_v2_mount(m)->path, "/sys/fs/cgroup/unified");
    EXPECT_EQ(find_v2_mount(m)->version, CgroupVersion::kV2);
}

TEST(CgroupMounts, UnescapesOctalInMountPoints) {
    auto m = parse_cgroup_mounts("cgroup2 /mnt/with\\040space cgroup2 rw 0 0\n");
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].path, "/mnt/with space");
}

TEST(CgroupOfTask, FindsTheLineOfTheHierarchy) {
    const std::string proc =
        "6:freezer:/vm/lab\n2:cpu,cpuacct:/machine.slice/x:y\n0::/user.slice/a\n";
    EXPECT_EQ(cgroup_of_task(proc, {"/f", CgroupVersion::kV1, {"freezer"}}), "/vm/lab");
    EXPECT_EQ(cgroup_of_task(proc, {"/c", CgroupVersion::kV1, {"cpu"}}), "/machine.slice/x:y");
    EXPECT_EQ(cgroup_of_task(proc, {"/u", CgroupVersion::kV2, {}}), "/user.slice/a");
    EXPECT_THROW(cgroup_of_task(proc, {"/m", CgroupVersion::kV1, {"memory"}}), LoadError);
}

TEST(OwnedNames, RoundTripAndRejectForeignNames) {
    EXPECT_EQ(owned_name(4242, "freeze-17"), "spinlab-4242-freeze-17");
    EXPECT_EQ(owner_of_name("spinlab-4242-freeze-17"), 4242);
    EXPECT_EQ(owner_of_name("spinlab-4242-ledger"), 4242);
    EXPECT_FALSE(owner_of_name("spinlab-abc-x"));
    EXPECT_FALSE(owner_of_name("spinlab-42"));
    EXPECT_FALSE(owner_of_name("spinlab-42-"));
    EXPECT_FALSE(owner_of_name("machine.slice"));
    EXPECT_FALSE(owner_of_name("spinlab--1-x"));
    EXPECT_THROW(owned_name(1, "a/b"), LoadError);
    EXPECT_THROW(owned_name(1, ""), LoadError);
    EXPECT_THROW(owned_name(0, "x"), LoadError);
}

TEST(JoinCgroupPath, StaysInsideTheHierarchy) {
    EXPECT_EQ(join_cgroup_path("/sys/fs/cgroup/freezer", "/"), "/sys/fs/cgroup/freezer");
    EXPECT_EQ(join_cgroup_path("/sys/fs/cgroup/freezer/", "/a/b"), "/sys/fs/cgroup/freezer/a/b");
    EXPECT_THROW(join_cgroup_path("/sys/fs/cgroup/freezer", "/a/../../etc"), LoadError);
    EXPECT_THROW(join_cgroup_path("/sys/fs/cgroup/freezer", "a"), LoadError);
    EXPECT_THROW(join_cgroup_path("/sys/fs/cgroup/freezer", "/a//b"), LoadError);
    EXPECT_THROW(join_cgroup_path("relative", "/a"), LoadError);
}

}  // namespace
}  // namespace spinlab::load
