// experiments/runner/vm_test.cc: the spinlab-vm command line and reading vm.json.
#include "vm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace spinlab::run {
namespace {

using Args = std::vector<std::string>;

TEST(SpinlabVmArgv, CarriesTheVmSpecAndTheKernelCommandLine) {
    Spec s;
    s.vm.cpus = 4;
    s.vm.memory_mb = 512;
    s.vm.accel = "tcg";
    Args a = spinlab_vm_argv(s, "/src/spinlab-vm", "lab", "/res/1");
    EXPECT_EQ(a, (Args{"/src/spinlab-vm", "run", "lab", "--quiet", "--cpus", "4", "--memory", "512",
                       "--accel", "tcg", "--backend", "qemu", "--append", kernel_append(s),
                       "--save-console", "/res/1/logs/console.log"}));
    s.vm.pin = {2, 3, 2, 3};
    s.vm.kernel = "k.elf";
    s.vm.initrd = "i.tar";
    Args b = spinlab_vm_argv(s, "v", "lab", "/res/1");
    Args tail(b.end() - 6, b.end());
    EXPECT_EQ(tail, (Args{"--pin", "2,3,2,3", "--kernel", "k.elf", "--initrd", "i.tar"}));
}

TEST(VmJson, ReadsWhatSpinlabVmWritesAndRefusesHalfAFile) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("vm_test." + std::to_string(getpid()) + ".json")).string();
    std::ofstream(path) << R"({"state": "running", "accel": "kvm", "backend": "qemu",
        "qemu_version": "8.2.2", "qemu_pid": 77, "vcpu_thread_ids": [10, 11]})";
    auto v = read_vm_json(path);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, "running");
    EXPECT_EQ(v->accel, "kvm");
    EXPECT_EQ(v->qemu_pid, 77u);
    EXPECT_EQ(v->vcpu_tids, (std::vector<uint64_t>{10, 11}));
    std::ofstream(path) << R"({"state": "runn)";
    EXPECT_FALSE(read_vm_json(path));
    std::filesystem::remove(path);
    EXPECT_FALSE(read_vm_json(path));
}

}  // namespace
}  // namespace spinlab::run
