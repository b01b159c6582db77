// experiments/runner/conditions_test.cc: the spinlab-load command lines of the host conditions
// (what freeze and throttle act on, with which parameters) and of the VM.
#include "conditions.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace spinlab::run {
namespace {

using Args = std::vector<std::string>;

VmInfo vm_with_pid() {
    VmInfo v;
    v.qemu_pid = 4242;
    v.vcpu_tids = {101, 102, 103, 104};
    return v;
}

VmInfo vm_without_pid() {
    VmInfo v = vm_with_pid();
    v.qemu_pid = 0;
    return v;
}

TEST(VcpuTargets, ByQemuPidAndIndexWhenThePidIsKnown) {
    EXPECT_EQ(vcpu_target_args(vm_with_pid(), {0, 2}), (Args{"--qemu-pid", "4242", "--vcpus", "0,2"}));
    EXPECT_EQ(vcpu_target_args(vm_with_pid(), {}), (Args{"--qemu-pid", "4242"}));
}

TEST(VcpuTargets, ByThreadIdOtherwiseInVcpuOrder) {
    EXPECT_EQ(vcpu_target_args(vm_without_pid(), {3, 1}), (Args{"--tid", "102,104"}));
    EXPECT_EQ(vcpu_target_args(vm_without_pid(), {}), (Args{"--tid", "101,102,103,104"}));
    // An index the VM does not have selects nothing rather than a wrong thread.
    EXPECT_EQ(vcpu_target_args(vm_without_pid(), {7}), (Args{"--tid", ""}));
}

TEST(ConditionArgv, FreezeFreezesTheChosenVcpusWithTheSpecsPeriodAndSeed) {
    RunSpec run;
    run.freeze_vcpus = {1};
    run.freeze_period_ms = 250;
    run.seed = 99;
    Args a = condition_argv(parse_phase("freeze-20ms"), run, "/bin/spinlab-load", vm_with_pid(),
                            "/r/freezes/freeze-20ms-r2.csv", "/r/logs/.ready");
    EXPECT_EQ(a, (Args{"/bin/spinlab-load", "freeze", "--qemu-pid", "4242", "--vcpus", "1",
                       "--freeze-ms", "20", "--period-ms", "250", "--seed", "99", "--out",
                       "/r/freezes/freeze-20ms-r2.csv", "--rt-priority", "10", "--ready-file", "/r/logs/.ready"}));
    run.freeze_rt_priority = 0;
    Args by_tid = condition_argv(parse_phase("freeze-5ms"), run, "L", vm_without_pid(), "p.csv", "r");
    EXPECT_EQ(by_tid, (Args{"L", "freeze", "--tid", "102", "--freeze-ms", "5", "--period-ms", "250",
                            "--seed", "99", "--out", "p.csv", "--ready-file", "r"}));
}

// The freeze record goes to freezes/ (preempt/ before issue 53), named by the phase's name, also
// where the spec said its old name.
TEST(FreezeRecordPath, IsInFreezesNamedByThePhase) {
    EXPECT_EQ(freeze_record_path("/r", parse_phase("freeze-20ms"), 2), "/r/freezes/freeze-20ms-r2.csv");
    EXPECT_EQ(freeze_record_path("/r", parse_phase("preempt-20ms"), 3), "/r/freezes/freeze-20ms-r3.csv");
}

TEST(ConditionArgv, FreezeKeepsTheFrozenBitOfTheVcpuStateWordsWhenAskedAndItKnowsTheIndexes) {
    RunSpec run;
    run.freeze_rt_priority = 0;
    run.vcpu_state = true;
    VmInfo vm = vm_with_pid();
    vm.region_file = "/dev/shm/spinlab-x";
    EXPECT_EQ(condition_argv(parse_phase("freeze-5ms"), run, "L", vm, "p.csv", "r"),
              (Args{"L", "freeze", "--qemu-pid", "4242", "--vcpus", "0", "--freeze-ms", "5", "--period-ms",
                    "100", "--seed", "1", "--out", "p.csv", "--vcpu-state", "/dev/shm/spinlab-x", "--ready-file",
                    "r"}));
    // By bare thread ids spinlab-load cannot tell a thread's vCPU index: no frozen bit (the
    // timeline's switch records still mark the frozen thread off its CPU).
    VmInfo by_tid = vm_without_pid();
    by_tid.region_file = "/dev/shm/spinlab-x";
    const Args a = condition_argv(parse_phase("freeze-5ms"), run, "L", by_tid, "p.csv", "r");
    EXPECT_EQ(std::find(a.begin(), a.end(), "--vcpu-state"), a.end());
    run.vcpu_state = false;
    const Args off = condition_argv(parse_phase("freeze-5ms"), run, "L", vm, "p.csv", "r");
    EXPECT_EQ(std::find(off.begin(), off.end(), "--vcpu-state"), off.end());
}

TEST(ConditionArgv, ThrottleLimitsEveryVcpuUnlessTold) {
    RunSpec run;
    Args all = condition_argv(parse_phase("throttle-40%"), run, "L", vm_with_pid(), "", "r");
    EXPECT_EQ(all, (Args{"L", "throttle", "--qemu-pid", "4242", "--quota-pct", "40", "--ready-file", "r"}));
    run.throttle_vcpus = {0, 3};
    Args some = condition_argv(parse_phase("throttle-5%"), run, "L", vm_without_pid(), "", "r");
    EXPECT_EQ(some, (Args{"L", "throttle", "--tid", "101,104", "--quota-pct", "5", "--ready-file", "r"}));
}

TEST(ConditionArgv, HostLoadHogsTheChosenHostCpus) {
    RunSpec run;
    EXPECT_EQ(condition_argv(parse_phase("host-load"), run, "L", vm_with_pid(), "", "r"),
              (Args{"L", "hog", "--ready-file", "r"}));
    run.hog_cpus = {0, 1};
    EXPECT_EQ(condition_argv(parse_phase("host-load"), run, "L", vm_with_pid(), "", "r"),
              (Args{"L", "hog", "--cpus", "0,1", "--ready-file", "r"}));
}

TEST(ConditionArgv, IdleHostHasNoCommand) {
    EXPECT_THROW(condition_argv(parse_phase("idle-host"), RunSpec{}, "L", vm_with_pid(), "", "r"),
                 std::logic_error);
}

TEST(ReadyFacts, TheKeyValueLinesAfterThePid) {
    auto f = ready_facts("4242\nrt_priority_asked=10\nrt_priority=0\nrt_priority_fallback=a: b=c\n");
    EXPECT_EQ(f.size(), 3u);
    EXPECT_EQ(f["rt_priority"], "0");
    EXPECT_EQ(f["rt_priority_fallback"], "a: b=c") << "split at the first '='";
    EXPECT_TRUE(ready_facts("4242\n").empty());
    EXPECT_TRUE(ready_facts("").empty()) << "a ready file gone already";
    EXPECT_EQ(ready_facts("4242\nx=1").at("x"), "1") << "no final newline";
}

}  // namespace
}  // namespace spinlab::run
