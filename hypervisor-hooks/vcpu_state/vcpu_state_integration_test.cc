// The vCPU state words (vcpu_state_publisher.h) kept by the real spinlab-load:
//
//   - timeline --vcpu-state on two fake vCPU threads, one asleep and one spinning: the test
//     reads the region file while it runs and sees the sleeper's word say "blocked" and the
//     spinner's say "running"; after SIGTERM every word and the publisher bit are 0 again.
//   - freeze --vcpu-state freezing vCPU 1 of a real guest (the kernel under TCG with the
//     shared region, booted into the vcpu_state_host self-test suite): the guest's own
//     vcpu_off(1) goes true during the freezes and false between them, and
//     vcpu_off(0) never (kernel-patch/selftest/vcpu_state_test.cc checks and prints it;
//     the guest leaves QEMU with its verdict). About 10 s.
//   - the same freezes with lockbench's pvmcs lock in ring 3 (the guest booted into lockbench):
//     its vcpu_is_off() answers "preempted" some of the time, through the read-only
//     mapping of the words kSysMapLockstat makes. About 10 s.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "channel/region_header.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/targets/thread_targets.h"
#include "hypervisor-hooks/testing/integration_support.h"

namespace spinlab::load {
namespace {

using namespace testing;

// A region file laid out as a guest lays it out, mapped for the test to read.
class Region {
public:
    Region(const std::string& path, uint32_t cpus) {
        size_ = region_size_needed(cpus, 4096);
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd_ < 0 || ::ftruncate(fd_, off_t(size_)) != 0) throw LoadError("cannot create " + path);
        base_ = static_cast<uint8_t*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
        if (base_ == MAP_FAILED || region_layout(base_, size_, cpus, 0, 0) != RegionError::kNone)
            throw LoadError("cannot lay out " + path);
    }
    ~Region() {
        ::munmap(base_, size_);
        ::close(fd_);
    }
    const VcpuStateArea& area() const {
        const auto* h = reinterpret_cast<const RegionHeader*>(base_);
        return *reinterpret_cast<const VcpuStateArea*>(base_ + h->sections[uint32_t(RegionSection::kVcpuState)].offset);
    }
    uint32_t off(uint32_t vcpu) const { return __atomic_load_n(&area().cpu[vcpu].off, __ATOMIC_RELAXED); }
    uint32_t publishers() const { return __atomic_load_n(&area().publishers, __ATOMIC_RELAXED); }

private:
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
};

TEST(VcpuStateIntegration, TimelineKeepsTheWordsFromTheThreadsSwitches) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    FakeVcpus sleeper(1, /*idle=*/true);
    FakeVcpus spinner(1);
    const std::string dir = temp_dir();
    Region region(dir + "/region", 2);
    ChildProcess timeline({SPINLAB_LOAD_BIN, "timeline", "--tid",
                           std::to_string(sleeper.tids()[0]) + "," + std::to_string(spinner.tids()[0]),
                           "--vcpu-state", dir + "/region", "--vcpu-state-latency-json", dir + "/latency.json",
                           "--out", dir + "/timeline.csv", "--state-dir", dir + "/s", "--ready-file",
                           dir + "/ready"});
    ASSERT_TRUE(eventually(kEventuallyS, [&] { return path_exists(dir + "/ready"); })) << timeline.stderr_text();
    EXPECT_TRUE(eventually(kEventuallyS, [&] { return region.publishers() == kVcpuStatePublisherSwitches; }));
    // The sleeper wakes every 100 ms for microseconds: its word says blocked almost always
    // (from its first switch-out on). The spinner runs, save when the host preempts it.
    bool sleeper_blocked = false, spinner_running = false;
    EXPECT_TRUE(eventually(kEventuallyS, [&] {
        sleeper_blocked = sleeper_blocked || region.off(0) == kVcpuOffBlocked;
        spinner_running = spinner_running || region.off(1) == 0;
        return sleeper_blocked && spinner_running;
    })) << "sleeper's word " << region.off(0) << ", spinner's " << region.off(1);
    ASSERT_EQ(::kill(timeline.pid(), SIGTERM), 0);
    const int status = timeline.wait(kEventuallyS);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << timeline.stderr_text();
    // Nothing keeps the words any more: all running, no publisher.
    EXPECT_EQ(region.off(0), 0u);
    EXPECT_EQ(region.off(1), 0u);
    EXPECT_EQ(region.publishers(), 0u);
    const std::string json = slurp(dir + "/latency.json");
    EXPECT_NE(json.find("\"source\":\"switches\""), std::string::npos) << json;
    EXPECT_EQ(json.find("\"latency_us\":{\"count\":0,"), std::string::npos) << "nothing published: " << json;
    std::printf("MEASURED %s%s", json.c_str(), timeline.stderr_text().c_str());
}

// A 2-vCPU guest under TCG with the shared region in `shm`, its console in `console`, booted
// with `append` (and the initrd when `initrd`).
std::vector<std::string> guest_argv(const std::string& shm, const std::string& console, const std::string& append,
                                    bool initrd) {
    std::vector<std::string> a{"/usr/bin/qemu-system-x86_64", "-name", "vstest,debug-threads=on", "-M", "q35", "-m",
                               "128", "-smp", "2", "-nographic", "-monitor", "none", "-vga", "none", "-no-reboot",
                               "-serial", "file:" + console, "-bios", "/usr/share/qemu/qboot.rom", "-kernel",
                               SPINLAB_GUEST_KERNEL, "-append", append, "-accel", "tcg,thread=multi", "-cpu", "max",
                               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-object",
                               "memory-backend-file,id=shm,share=on,mem-path=" + shm + ",size=16M", "-device",
                               "ivshmem-plain,memdev=shm,bus=pcie.0,addr=0x5"};
    if (initrd) a.insert(a.end(), {"-initrd", SPINLAB_GUEST_INITRD});
    return a;
}

struct UnlinkOnExit {
    std::string path;
    ~UnlinkOnExit() { ::unlink(path.c_str()); }
};

// spinlab-load freeze freezing vCPU 1 for 150 ms every 400 ms and keeping its word.
ChildProcess freeze_vcpu1(pid_t qemu, const std::string& shm, const std::string& dir) {
    return ChildProcess({SPINLAB_LOAD_BIN, "freeze", "--qemu-pid", std::to_string(qemu), "--vcpus", "1",
                         "--freeze-ms", "150", "--period-ms", "400", "--vcpu-state", shm,
                         "--vcpu-state-latency-json", dir + "/latency.json", "--out", dir + "/freezes.csv",
                         "--state-dir", dir + "/s"});
}

std::string guest_skip_reason() {
    if (std::string why = need_root(); !why.empty()) return why;
    if (::access("/usr/bin/qemu-system-x86_64", X_OK) != 0) return "/usr/bin/qemu-system-x86_64 is not installed";
    return "";
}

TEST(VcpuStateIntegration, TheGuestSeesItsFrozenVcpuAsPreempted) {
    if (std::string why = guest_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(path_exists(SPINLAB_GUEST_KERNEL)) << SPINLAB_GUEST_KERNEL << " missing: run `make kernel`";
    const std::string dir = temp_dir();
    const std::string shm = "/dev/shm/spinlab-vstest-" + std::to_string(::getpid());
    const std::string console = dir + "/console.log";
    UnlinkOnExit unlink_shm{shm};
    ChildProcess vm(guest_argv(shm, console, "selftest=vcpu_state_host", false));
    // Freeze only once the guest has booted (a frozen AP during SMP bring-up is another test).
    ASSERT_TRUE(eventually(60, [&] { return slurp(console).find("selftest: running") != std::string::npos; }))
        << vm.stderr_text() << slurp(console);
    ChildProcess freeze = freeze_vcpu1(vm.pid(), shm, dir);
    const int vm_status = vm.wait(90);
    ::kill(freeze.pid(), SIGTERM);
    const int freeze_status = freeze.wait(kEventuallyS);
    const std::string log = slurp(console);
    std::printf("MEASURED guest: %s\nMEASURED host: %s%s\n",
                log.substr(std::min(log.find("vcpu_state: "), log.size())).c_str(),
                slurp(dir + "/latency.json").c_str(), freeze.stderr_text().c_str());
    ASSERT_NE(vm_status, -1) << "the guest did not finish within 90 s:\n" << log;
    // isa-debug-exit: (0x10 << 1) | 1 = 33 when every test passed.
    EXPECT_TRUE(WIFEXITED(vm_status) && WEXITSTATUS(vm_status) == 33) << vm_status << "\n" << log;
    EXPECT_NE(log.find("[       OK ] vcpu_state_host.host_freezes_are_seen"), std::string::npos) << log;
    EXPECT_TRUE(WIFEXITED(freeze_status) && WEXITSTATUS(freeze_status) == 0) << freeze.stderr_text();
}

// Ring 3 too: lockbench's pvmcs lock (the user-level Env) reads the same words through the
// read-only mapping kSysMapLockstat makes, and says at the end how often it was told "preempted".
// With vCPU 1 frozen 150 of every 400 ms while both vCPUs contend for one lock, the waiter on
// vCPU 0 is queued behind vCPU 1 during some freezes; without the words (or without the host
// writer) every answer is "running" under TCG, which has no steal time.
TEST(VcpuStateIntegration, LockbenchInRing3SeesTheFrozenVcpuAsPreempted) {
    if (std::string why = guest_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(path_exists(SPINLAB_GUEST_INITRD)) << SPINLAB_GUEST_INITRD << " missing: run `make kernel`";
    const std::string dir = temp_dir();
    const std::string shm = "/dev/shm/spinlab-vstest-r3-" + std::to_string(::getpid());
    const std::string console = dir + "/console.log";
    UnlinkOnExit unlink_shm{shm};
    ChildProcess vm(guest_argv(shm, console,
                               "lock=pvmcs init=/bin/lockbench --threads-per-cpu 1 --locks 1 --pattern same "
                               "--duration-ms 4000",
                               true));
    ASSERT_TRUE(eventually(60, [&] { return slurp(console).find("lockbench: 2 threads") != std::string::npos; }))
        << vm.stderr_text() << slurp(console);
    ChildProcess freeze = freeze_vcpu1(vm.pid(), shm, dir);
    const int vm_status = vm.wait(60);
    ::kill(freeze.pid(), SIGTERM);
    freeze.wait(kEventuallyS);
    const std::string log = slurp(console);
    ASSERT_NE(vm_status, -1) << "the guest did not finish within 60 s:\n" << log;
    EXPECT_TRUE(WIFEXITED(vm_status) && WEXITSTATUS(vm_status) == 33) << vm_status << "\n" << log;
    const size_t at = log.find("vcpu_is_off: ");
    ASSERT_NE(at, std::string::npos) << "lockbench printed no vcpu_is_off line:\n" << log;
    unsigned long said = 0, asked = 0;
    ASSERT_EQ(std::sscanf(log.c_str() + at, "vcpu_is_off: %lu of %lu", &said, &asked), 2) << log.substr(at);
    std::printf("MEASURED %s\n", log.substr(at, log.find('\n', at) - at).c_str());
    EXPECT_NE(log.find("host words mapped", at), std::string::npos) << log.substr(at);
    EXPECT_GT(said, 0u) << log.substr(at);
    EXPECT_LT(said, asked) << log.substr(at);  // and "running" while vCPU 1 ran
}

}  // namespace
}  // namespace spinlab::load
