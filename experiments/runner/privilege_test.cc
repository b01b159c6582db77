// experiments/runner/privilege_test.cc: a phase the user cannot run, or a run directory it may
// not write, is refused in one sentence before anything starts (privilege.h).
#include "privilege.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>

namespace spinlab::run {
namespace {

const std::string kV2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n";
const std::string kV1 =
    "cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,freezer 0 0\n"
    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n";

std::vector<Phase> phases(std::initializer_list<const char*> names) {
    std::vector<Phase> out;
    for (const char* n : names) out.push_back(parse_phase(n));
    return out;
}

auto nothing_writable = [](const std::string&) { return false; };
auto all_writable = [](const std::string&) { return true; };

TEST(CgroupRefusal, PhasesWithoutCgroupsNeedNothing) {
    EXPECT_EQ(cgroup_refusal(phases({"idle-host", "host-load"}), kV2, nothing_writable, "student"), "");
}

TEST(CgroupRefusal, AFreezeWithoutAWritableCgroupIsRefusedInOneSentence) {
    EXPECT_EQ(cgroup_refusal(phases({"idle-host", "freeze-20ms"}), kV2, nothing_writable, "student"),
              "phase freeze-20ms freezes vCPUs through a cgroup, and user student may not create one in "
              "/sys/fs/cgroup: run it as root (sudo), have root give this user a cgroup hierarchy it may write, "
              "or leave the phase out (--run.phases)");
    EXPECT_EQ(cgroup_refusal(phases({"freeze-20ms"}), kV2, all_writable, "student"), "");
}

TEST(CgroupRefusal, ThrottlingLooksForTheCpuHierarchy) {
    // v1: the freezer hierarchy is writable, the cpu one is not.
    auto only_freezer = [](const std::string& d) { return d == "/sys/fs/cgroup/freezer"; };
    EXPECT_EQ(cgroup_refusal(phases({"freeze-20ms"}), kV1, only_freezer, "u"), "");
    const std::string why = cgroup_refusal(phases({"freeze-20ms", "throttle-50%"}), kV1, only_freezer, "u");
    EXPECT_EQ(why.rfind("phase throttle-50% throttles vCPUs through a cgroup, and user u may not create one in "
                        "/sys/fs/cgroup/cpu,cpuacct:", 0), 0u) << why;
}

TEST(CgroupRefusal, NoHierarchyAtAllIsNamed) {
    EXPECT_EQ(cgroup_refusal(phases({"throttle-50%"}), "proc /proc proc rw 0 0\n", all_writable, "u"),
              "phase throttle-50% throttles vCPUs through a cgroup, and no cgroup hierarchy is mounted: mount one "
              "(mount -t cgroup2 none /sys/fs/cgroup) or leave the phase out (--run.phases)");
}

// access(W_OK | X_OK) of a file system where only `exist` exists, with these errors.
auto fs_of(std::map<std::string, int> exist) {
    return [exist](const std::string& path) {
        auto it = exist.find(path);
        return it == exist.end() ? ENOENT : it->second;
    };
}

const std::string kHint =
    "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write";

TEST(RunDirRefusal, AWritableOrCreatableRunDirectoryIsFine) {
    // There with its vm/, there without it, and missing under a writable parent.
    EXPECT_EQ(run_dir_refusal("/run/user/1000/spinlab", "u",
                              fs_of({{"/run/user/1000/spinlab", 0}, {"/run/user/1000/spinlab/vm", 0}})), "");
    EXPECT_EQ(run_dir_refusal("/run/user/1000/spinlab", "u", fs_of({{"/run/user/1000/spinlab", 0}})), "");
    EXPECT_EQ(run_dir_refusal("/tmp/a/b/spinlab-1000", "u", fs_of({{"/", EACCES}, {"/tmp", 0}})), "");
}

TEST(RunDirRefusal, RootsVmFolderIsRefusedNamingIt) {
    // The case: /run/spinlab there, its vm/ root's.
    EXPECT_EQ(run_dir_refusal("/run/spinlab", "student",
                              fs_of({{"/run/spinlab", 0}, {"/run/spinlab/vm", EACCES}})),
              "user student may not write the run directory /run/spinlab (/run/spinlab/vm: Permission denied): " +
                  kHint);
    EXPECT_EQ(run_dir_refusal("/run/spinlab", "student", fs_of({{"/run/spinlab", EACCES}})),
              "user student may not write the run directory /run/spinlab (/run/spinlab: Permission denied): " +
                  kHint);
}

TEST(RunDirRefusal, AMissingOneUnderAParentThatMayNotBeWrittenCannotBeCreated) {
    EXPECT_EQ(run_dir_refusal("/srv/ro/a/spinlab", "nobody", fs_of({{"/srv/ro", EROFS}, {"/srv", 0}})),
              "user nobody may not create the run directory /srv/ro/a/spinlab (/srv/ro: Read-only file system): " +
                  kHint);
    EXPECT_EQ(run_dir_refusal("/f/spinlab", "u", fs_of({{"/f/spinlab", ENOTDIR}})).rfind(
                  "user u may not write the run directory /f/spinlab (/f/spinlab: Not a directory)", 0),
              0u);
}

}  // namespace
}  // namespace spinlab::run
