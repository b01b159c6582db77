// experiments/runner/privilege_test.cc: a phase the user cannot run is refused in one sentence
// before anything starts (privilege.h).
#include "privilege.h"

#include <gtest/gtest.h>

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
    EXPECT_EQ(cgroup_refusal(phases({"idle-host", "preempt-20ms"}), kV2, nothing_writable, "student"),
              "phase preempt-20ms freezes vCPUs through a cgroup, and user student may not create one in "
              "/sys/fs/cgroup: run it as root (sudo), have root give this user a cgroup hierarchy it may write, "
              "or leave the phase out (--run.phases)");
    EXPECT_EQ(cgroup_refusal(phases({"preempt-20ms"}), kV2, all_writable, "student"), "");
}

TEST(CgroupRefusal, ThrottlingLooksForTheCpuHierarchy) {
    // v1: the freezer hierarchy is writable, the cpu one is not.
    auto only_freezer = [](const std::string& d) { return d == "/sys/fs/cgroup/freezer"; };
    EXPECT_EQ(cgroup_refusal(phases({"preempt-20ms"}), kV1, only_freezer, "u"), "");
    const std::string why = cgroup_refusal(phases({"preempt-20ms", "throttle-50%"}), kV1, only_freezer, "u");
    EXPECT_EQ(why.rfind("phase throttle-50% throttles vCPUs through a cgroup, and user u may not create one in "
                        "/sys/fs/cgroup/cpu,cpuacct:", 0), 0u) << why;
}

TEST(CgroupRefusal, NoHierarchyAtAllIsNamed) {
    EXPECT_EQ(cgroup_refusal(phases({"throttle-50%"}), "proc /proc proc rw 0 0\n", all_writable, "u"),
              "phase throttle-50% throttles vCPUs through a cgroup, and no cgroup hierarchy is mounted: mount one "
              "(mount -t cgroup2 none /sys/fs/cgroup) or leave the phase out (--run.phases)");
}

}  // namespace
}  // namespace spinlab::run
