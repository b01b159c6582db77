// experiments/runner/pinning_test.cc: [neighbours] parsing, the pinning plan (every VM's vCPUs
// on the chosen host CPUs, overcommit as planned), each neighbour's spec and command lines.
#include "pinning.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "neighbours.h"
#include "timeline_recording.h"
#include "vm.h"

namespace spinlab::run {
namespace {

ParsedSpec parse(std::vector<std::string> args) {
    std::vector<std::string> a{"spinlab-run", "--run.phases", "idle-host,neighbours-1,neighbours-3"};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (auto& s : a) argv.push_back(s.c_str());
    return parse_spec(int(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
    try {
        parse(args);
    } catch (const SpecError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(PinPlan, RoundRobinOverTheHostCpusInVmOrder) {
    using L = std::vector<std::vector<uint32_t>>;
    EXPECT_EQ(pin_plan({2, 2, 2}, {0, 1}), (L{{0, 1}, {0, 1}, {0, 1}}));
    EXPECT_EQ(pin_plan({3, 1, 2}, {4, 5}), (L{{4, 5, 4}, {5}, {4, 5}}));
    EXPECT_EQ(pin_plan({2, 2}, {7}), (L{{7, 7}, {7, 7}}));
    EXPECT_EQ(pin_plan({2, 2}, {}), (L{{}, {}}));  // not pinned
}

TEST(PinPlan, EveryVmOfTheDefaultSpecOnTheTwoHostCpus) {
    Spec s = parse({"--neighbours.host-cpus", "0,1"}).spec;
    EXPECT_EQ(max_neighbours(s), 3u);
    for (uint32_t k = 0; k <= 3; ++k) EXPECT_EQ(vm_pin(s, k), (std::vector<uint32_t>{0, 1})) << k;
    EXPECT_DOUBLE_EQ(overcommit(s, 0, 2), 1.0);
    EXPECT_DOUBLE_EQ(overcommit(s, 3, 2), 4.0);
    // 3-vCPU neighbours: neighbour 1 continues where the measured VM's 2 vCPUs ended.
    Spec t = parse({"--neighbours.host-cpus", "0,1", "--neighbours.cpus", "3"}).spec;
    EXPECT_EQ(vm_pin(t, 1), (std::vector<uint32_t>{0, 1, 0}));
    EXPECT_EQ(vm_pin(t, 2), (std::vector<uint32_t>{1, 0, 1}));
    EXPECT_DOUBLE_EQ(overcommit(t, 2, 2), 4.0);
    // No host-cpus: vm.pin alone, neighbours unpinned.
    Spec u = parse({"--vm.pin", "1,0"}).spec;
    EXPECT_EQ(vm_pin(u, 0), (std::vector<uint32_t>{1, 0}));
    EXPECT_TRUE(vm_pin(u, 1).empty());
}

TEST(NeighbourSpec, FollowsTheMeasuredVmUnlessToldOtherwise) {
    Spec s = parse({"--vm.lock", "ticket", "--workload.args", "--locks 2", "--neighbours.host-cpus", "0,1",
                    "--trace.enable", "long-wait", "--vm.memory", "128"})
                 .spec;
    Spec n = neighbour_spec(s, 2, neighbour_name("run7", 2));
    EXPECT_EQ(n.vm.name, "run7-n2");
    EXPECT_EQ(n.vm.lock, "ticket");
    EXPECT_EQ(n.vm.cpus, 2u);
    EXPECT_EQ(n.vm.memory_mb, 128u);
    EXPECT_EQ(n.workload.args, "--locks 2");
    EXPECT_EQ(init_line(n.workload), init_line(s.workload));
    EXPECT_FALSE(n.trace.enabled());
    EXPECT_EQ(n.run.clock_samples, 0u);

    Spec o = parse({"--neighbours.lock", "mcs", "--neighbours.cpus", "1", "--neighbours.memory", "64",
                    "--neighbours.program", "lockbench", "--neighbours.args", "--locks 3"})
                 .spec;
    Spec m = neighbour_spec(o, 1, "x-n1");
    EXPECT_EQ(m.vm.lock, "mcs");
    EXPECT_EQ(m.vm.cpus, 1u);
    EXPECT_EQ(m.vm.memory_mb, 64u);
    EXPECT_EQ(m.workload.args, "--locks 3");
    EXPECT_FALSE(m.workload.kmix);
    EXPECT_EQ(o.vm.lock, "tas");  // the measured VM keeps its own
}

TEST(NeighbourSpec, ToIniReadsBack) {
    Spec s = parse({"--neighbours.host-cpus", "0,1", "--neighbours.lock", "mcs", "--neighbours.cpus", "1",
                    "--neighbours.program", "lockbench", "--neighbours.args", "--locks 3"})
                 .spec;
    const std::string ini = to_ini(s);
    EXPECT_NE(ini.find("[neighbours]\ncpus = 1\n"), std::string::npos) << ini;
    std::string path = testing::TempDir() + "pinning_test_" + std::to_string(getpid()) + ".ini";
    std::ofstream(path) << ini;
    Spec b = parse({"--spec", path}).spec;
    EXPECT_EQ(b.neighbours.host_cpus, s.neighbours.host_cpus);
    EXPECT_EQ(b.neighbours.lock, "mcs");
    EXPECT_EQ(b.neighbours.args, "--locks 3");
    EXPECT_EQ(to_ini(b).substr(to_ini(b).find('\n')), ini.substr(ini.find('\n')));
}

TEST(NeighbourSpec, BadKeysNameWhatIsWrong) {
    EXPECT_EQ(error_of({"--neighbours.cpus", "0"}), "--neighbours.cpus = '0': must be a whole number from 1 to 64");
    EXPECT_EQ(error_of({"--neighbours.lock", "spin"}).rfind("--neighbours.lock = 'spin': must be one of", 0), 0u);
    EXPECT_EQ(error_of({"--neighbours.host-cpus", "0,0"}), "--neighbours.host-cpus = '0,0': names 0 twice");
    EXPECT_EQ(error_of({"--neighbours.host-cpus", "0", "--vm.pin", "0,0"}),
              "--neighbours.host-cpus and --vm.pin both pin the measured VM: give one");
    EXPECT_EQ(error_of({"--neighbours.args", "--locks 2"}),
              "--neighbours.args = '--locks 2': needs neighbours.program (without it the neighbours run the "
              "measured VM's [workload])");
    EXPECT_EQ(error_of({"--vm.attach", "other"}),
              "vm.attach and a neighbours-N phase: neighbour VMs are started beside a VM spinlab-run starts, "
              "whose pinning it sets; give vm.name instead");
}

TEST(NeighbourArgv, SpinlabVmPinsAndLogsEachNeighbour) {
    Spec s = parse({"--neighbours.host-cpus", "3,2", "--vm.accel", "tcg", "--vm.backend", "libvirt"}).spec;
    auto has = [](const std::vector<std::string>& a, const std::string& k, const std::string& v) {
        for (size_t i = 0; i + 1 < a.size(); ++i)
            if (a[i] == k && a[i + 1] == v) return true;
        return false;
    };
    auto measured = spinlab_vm_argv(s, "spinlab-vm", "m", "/r");
    EXPECT_TRUE(has(measured, "--pin", "3,2"));
    Spec n = neighbour_spec(s, 1, "m-n1");
    auto a = spinlab_vm_argv(n, "spinlab-vm", "m-n1", "/r", "neighbours-1-r1-n1.console");
    EXPECT_EQ(a[1], "run");
    EXPECT_EQ(a[2], "m-n1");
    EXPECT_TRUE(has(a, "--pin", "3,2"));
    EXPECT_TRUE(has(a, "--backend", "libvirt"));
    EXPECT_TRUE(has(a, "--accel", "tcg"));
    EXPECT_TRUE(has(a, "--save-console", "/r/logs/neighbours-1-r1-n1.console.log"));
    EXPECT_EQ(neighbour_snapshot_file("neighbours-2", 3, 1), "snapshots/neighbours/neighbours-2-r3-n1.json");
}

TEST(NeighbourArgv, TimelineNamesEachNeighboursVcpuThreads) {
    VmInfo vm;
    vm.vcpu_tids = {10, 11};
    NeighbourThreads n{{"m-n1", {20, 21}}, {"m-n2", {30, 31}}};
    auto a = timeline_argv("load", "neighbours-2", 1, vm, "t.csv", ".ready", "", false, n, true);
    std::vector<std::string> want{"load", "timeline", "--tid", "10,11", "--out", "t.csv", "--phase", "neighbours-2",
                                  "--rep", "1", "--ready-file", ".ready", "--neighbour", "m-n1:20,21",
                                  "--neighbour", "m-n2:30,31"};
    EXPECT_EQ(a, want);
    // A spinlab-load without --neighbour: the timeline still runs, without naming them.
    auto b = timeline_argv("load", "neighbours-2", 1, vm, "t.csv", ".ready", "", false, n, false);
    EXPECT_EQ(b, std::vector<std::string>(want.begin(), want.end() - 4));
}

}  // namespace
}  // namespace spinlab::run
