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
        "qemu_version": "8.2.2", "qemu_pid": 77, "vcpu_thread_ids": [10, 11], "vcpu_apic_ids": [0, 1]})";
    auto v = read_vm_json(path);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->vcpu_apic_ids, (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(v->state, "running");
    EXPECT_EQ(v->accel, "kvm");
    EXPECT_EQ(v->qemu_pid, 77u);
    EXPECT_EQ(v->vcpu_tids, (std::vector<uint64_t>{10, 11}));
    std::ofstream(path) << R"({"state": "runn)";
    EXPECT_FALSE(read_vm_json(path));
    std::ofstream(path) << R"({"state": "running", "vcpu_thread_ids": [10, 11]})";
    EXPECT_FALSE(read_vm_json(path)->vcpu_apic_ids);  // libvirt: none recorded, so not checked
    std::filesystem::remove(path);
    EXPECT_FALSE(read_vm_json(path));
}

TEST(CpuMapping, GuestCpuNMustHaveVcpuNsApicId) {
    EXPECT_EQ(cpu_mapping_problem({0, 1, 2, 3}, {0, 1, 2, 3}), "");
    EXPECT_EQ(cpu_mapping_problem({0, 2, 4}, {0, 2, 4}), "");  // ids need not be dense
    EXPECT_EQ(cpu_mapping_problem({0, 2, 1, 3}, {0, 1, 2, 3}),
              "guest CPU 1 has APIC id 2 but QEMU's vCPU 1 has APIC id 1: the guest numbers its CPUs "
              "differently from QEMU, so the host's timeline of vCPU 1's thread is not CPU 1's");
    EXPECT_EQ(cpu_mapping_problem({0, 1}, {0, 1, 2}), "the guest has 2 CPUs, QEMU 3 vCPUs");
}

}  // namespace
}  // namespace spinlab::run
