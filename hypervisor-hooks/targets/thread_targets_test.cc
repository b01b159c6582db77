#include "thread_targets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "hypervisor-hooks/cgroups/thread_cgroup.h"
#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

TEST(VcpuThreadName, AcceptsQemuNamesOnly) {
    EXPECT_EQ(parse_vcpu_thread_name("CPU 0/TCG"), 0);
    EXPECT_EQ(parse_vcpu_thread_name("CPU 13/KVM"), 13);
    EXPECT_FALSE(parse_vcpu_thread_name("CPU 0/FOO"));
    EXPECT_FALSE(parse_vcpu_thread_name("CPU /TCG"));
    EXPECT_FALSE(parse_vcpu_thread_name("CPU -1/TCG"));
    EXPECT_FALSE(parse_vcpu_thread_name("qemu-system-x86"));
    EXPECT_FALSE(parse_vcpu_thread_name("IO mon_iothread"));
}

TEST(TargetSpec, ExactlyOneSource) {
    EXPECT_THROW(validate_target_spec({}), LoadError);
    TargetSpec two;
    two.tids = {1};
    two.qemu_pid = 5;
    try {
        validate_target_spec(two);
        FAIL() << "accepted two sources";
    } catch (const LoadError& e) {
        EXPECT_STREQ(e.what(), "give only one of --tid, --qemu-pid and --qmp");
    }
    TargetSpec vcpus_with_tids;
    vcpus_with_tids.tids = {1};
    vcpus_with_tids.vcpus = {0};
    EXPECT_THROW(validate_target_spec(vcpus_with_tids), LoadError);
}

TEST(ResolveTargets, TidListKeepsPositionAsVcpuAndNamesMissingThreads) {
    TargetSpec spec;
    spec.tids = {::getpid()};
    auto t = resolve_targets(spec);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].pid, ::getpid());
    EXPECT_EQ(t[0].vcpu, 0);
    spec.tids = {999999999};
    try {
        resolve_targets(spec);
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_STREQ(e.what(), "--tid 999999999: no such thread");
    }
}

TEST(ResolveTargets, QemuPidWithoutVcpuThreadsSaysHowToName) {
    TargetSpec spec;
    spec.qemu_pid = ::getpid();
    try {
        resolve_targets(spec);
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("debug-threads=on"), std::string::npos) << e.what();
    }
}

// choose_hierarchy decides between v1 and v2 from what is mounted: all cases, no root needed.
TEST(ChooseHierarchy, PrefersV2ForFreezingAndV1ForCpu) {
    std::vector<CgroupMount> both = {{"/cg/freezer", CgroupVersion::kV1, {"freezer"}},
                                     {"/cg/cpu", CgroupVersion::kV1, {"cpu", "cpuacct"}},
                                     {"/cg/unified", CgroupVersion::kV2, {}}};
    EXPECT_EQ(choose_hierarchy("freezer", CgroupMethod::kAuto, both, "").mount, "/cg/unified");
    EXPECT_EQ(choose_hierarchy("freezer", CgroupMethod::kV1, both, "").mount, "/cg/freezer");
    EXPECT_EQ(choose_hierarchy("cpu", CgroupMethod::kAuto, both, "cpu io").mount, "/cg/cpu");
    EXPECT_EQ(choose_hierarchy("cpu", CgroupMethod::kV2, both, "cpu io").mount, "/cg/unified");
    std::vector<CgroupMount> v2_only = {{"/sys/fs/cgroup", CgroupVersion::kV2, {}}};
    EXPECT_EQ(choose_hierarchy("cpu", CgroupMethod::kAuto, v2_only, "cpuset cpu io memory").version,
              CgroupVersion::kV2);
}

TEST(ChooseHierarchy, ClearErrorWhenNeitherHasTheController) {
    std::vector<CgroupMount> here = {{"/cg/freezer", CgroupVersion::kV1, {"freezer"}},
                                     {"/cg/unified", CgroupVersion::kV2, {}}};
    try {
        choose_hierarchy("cpu", CgroupMethod::kAuto, here, "");
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_STREQ(e.what(),
                     "the cpu controller is neither mounted as cgroup v1 nor available in cgroup "
                     "v2 (cgroup v2 at /cg/unified offers only '')");
    }
    EXPECT_THROW(choose_hierarchy("cpu", CgroupMethod::kV1, here, ""), LoadError);
    EXPECT_THROW(choose_hierarchy("freezer", CgroupMethod::kV2, {}, ""), LoadError);
    EXPECT_THROW(parse_cgroup_method("v3", "cgroup"), LoadError);
}

}  // namespace
}  // namespace spinlab::load
