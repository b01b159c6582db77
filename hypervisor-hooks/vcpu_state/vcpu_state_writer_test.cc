// The host's writer of the guest's vCPU state words (vcpu_state_writer.h) and the switch logic
// that drives it (vcpu_state_publisher.h), on a temporary file laid out as a guest lays out
// its region, with scripted perf switch records.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/testing/scratch_dir.h"
#include "vcpu_state_publisher.h"
#include "vcpu_state_writer.h"

namespace spinlab::load {
namespace {

constexpr uint32_t kCpus = 4;

// A region file the test writes as the guest would (layout, reboot, scribbles).
class GuestRegion {
public:
    explicit GuestRegion(const std::string& path, bool lay_out = true) : path_(path) {
        size_ = region_size_needed(kCpus, 4096);
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        EXPECT_GE(fd_, 0);
        EXPECT_EQ(::ftruncate(fd_, off_t(size_)), 0);
        base_ = static_cast<uint8_t*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
        EXPECT_NE(base_, MAP_FAILED);
        if (lay_out) layout();
    }
    ~GuestRegion() {
        ::munmap(base_, size_);
        ::close(fd_);
    }
    void layout() { ASSERT_EQ(region_layout(base_, size_, kCpus, 0, 0), RegionError::kNone); }
    RegionHeader* header() { return reinterpret_cast<RegionHeader*>(base_); }
    VcpuStateArea* area() {
        return reinterpret_cast<VcpuStateArea*>(base_ + header()->sections[uint32_t(RegionSection::kVcpuState)].offset);
    }
    uint32_t off(uint32_t vcpu) { return __atomic_load_n(&area()->cpu[vcpu].off, __ATOMIC_RELAXED); }
    uint8_t* base() { return base_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
};

std::vector<ThreadTarget> two_vcpus() { return {{100, 1000, 0}, {100, 1001, 1}}; }

SwitchRecord out(int tid, uint64_t ts, bool preempt = true) { return {tid, ts, 0, false, preempt}; }
SwitchRecord in(int tid, uint64_t ts) { return {tid, ts, 0, true, false}; }

struct Fixture : ::testing::Test {
    spinlab::load::testing::ScratchDir dir{"vcpu-state"};
    std::string path = dir.path() + "/region";
};

TEST_F(Fixture, SwitchOutSetsTheWordAndSwitchInClearsIt) {
    GuestRegion guest(path);
    VcpuStateWriter writer(path, kVcpuStatePublisherSwitches, kVcpuOffPreempted | kVcpuOffBlocked, {0, 1});
    ASSERT_EQ(writer.refresh(), VcpuStateWriter::State::kAttached) << writer.why();
    EXPECT_EQ(guest.area()->publishers, kVcpuStatePublisherSwitches);
    SwitchPublishing pub(writer, two_vcpus());
    uint64_t now = 5'000;
    auto clock = [&] { return now; };

    pub.apply({out(1001, 1'000)}, clock);  // vCPU 1 preempted (still runnable)
    EXPECT_EQ(guest.off(1), kVcpuOffPreempted);
    EXPECT_EQ(guest.off(0), 0u);
    EXPECT_EQ(guest.area()->cpu[1].changes, 1u);
    pub.apply({in(1001, 4'000)}, clock);  // back on its CPU
    EXPECT_EQ(guest.off(1), 0u);
    pub.apply({out(1000, 4'500, /*preempt=*/false)}, clock);  // vCPU 0 blocked (slept, frozen)
    EXPECT_EQ(guest.off(0), kVcpuOffBlocked);

    const PublishStats& s = pub.stats();
    EXPECT_EQ(s.published, 3u);
    ASSERT_EQ(s.latency_us.size(), 3u);  // store time - switch time, us
    EXPECT_DOUBLE_EQ(s.latency_us[0], 4.0);
    EXPECT_DOUBLE_EQ(s.latency_us[1], 1.0);
    EXPECT_DOUBLE_EQ(s.latency_us[2], 0.5);
    EXPECT_NE(s.json(path).find("\"latency_us\":{\"count\":3,"), std::string::npos) << s.json(path);
}

TEST_F(Fixture, TheNewestSwitchOfAPollWins) {
    GuestRegion guest(path);
    VcpuStateWriter writer(path, kVcpuStatePublisherSwitches, kVcpuOffPreempted | kVcpuOffBlocked, {0, 1});
    ASSERT_EQ(writer.refresh(), VcpuStateWriter::State::kAttached);
    SwitchPublishing pub(writer, two_vcpus());
    auto clock = [] { return uint64_t(10'000); };
    // Out and in again within one poll, given in any order: the word stays 0, never flickers.
    pub.apply({in(1001, 2'000), out(1001, 1'000)}, clock);
    EXPECT_EQ(guest.off(1), 0u);
    EXPECT_EQ(guest.area()->cpu[1].changes, 0u);
    EXPECT_EQ(pub.stats().superseded, 1u);
    EXPECT_EQ(pub.stats().unchanged, 1u);
    pub.apply({in(1001, 3'000), out(1001, 3'500), in(1001, 3'600), out(1001, 3'700)}, clock);
    EXPECT_EQ(guest.off(1), kVcpuOffPreempted);
    EXPECT_EQ(pub.stats().superseded, 4u);
    ASSERT_EQ(pub.stats().latency_us.size(), 1u);
    EXPECT_DOUBLE_EQ(pub.stats().latency_us[0], 6.3);  // from the newest switch
}

TEST_F(Fixture, AVcpuWithoutAWordIsRefusedWithAClearError) {
    GuestRegion guest(path);
    try {
        VcpuStateWriter writer(path, kVcpuStatePublisherSwitches, kVcpuOffPreempted, {0, 64});
        FAIL() << "vCPU 64 accepted";
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("vCPU 64 has no word"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("vCPUs 0..63"), std::string::npos) << e.what();
    }
    VcpuStateWriter writer(path, kVcpuStatePublisherSwitches, kVcpuOffPreempted, {0, 1});
    ASSERT_EQ(writer.refresh(), VcpuStateWriter::State::kAttached);
    EXPECT_THROW(writer.set(2, kVcpuOffPreempted), LoadError);  // not one of its vCPUs
    EXPECT_THROW(writer.set(4000, kVcpuOffPreempted), LoadError);
    EXPECT_EQ(guest.off(2), 0u);
}

TEST_F(Fixture, TwoWritersShareAWordEachWithItsOwnBits) {
    GuestRegion guest(path);
    VcpuStateWriter switches(path, kVcpuStatePublisherSwitches, kVcpuOffPreempted | kVcpuOffBlocked, {1});
    VcpuStateWriter freezes(path, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {1});
    ASSERT_EQ(switches.refresh(), VcpuStateWriter::State::kAttached);
    ASSERT_EQ(freezes.refresh(), VcpuStateWriter::State::kAttached);
    EXPECT_EQ(guest.area()->publishers, kVcpuStatePublisherSwitches | kVcpuStatePublisherFreezes);
    EXPECT_TRUE(freezes.set(1, kVcpuOffFrozen));
    EXPECT_TRUE(switches.set(1, kVcpuOffBlocked));
    EXPECT_EQ(guest.off(1), kVcpuOffFrozen | kVcpuOffBlocked);
    EXPECT_TRUE(freezes.set(1, 0));  // thawed: the thread still waits for a CPU
    EXPECT_EQ(guest.off(1), kVcpuOffBlocked);
    EXPECT_FALSE(freezes.set(1, kVcpuOffPreempted));  // not its bit: masked to 0, unchanged
    EXPECT_EQ(guest.off(1), kVcpuOffBlocked);
    freezes.detach();
    EXPECT_EQ(guest.area()->publishers, kVcpuStatePublisherSwitches);
    switches.detach();  // at exit every bit and publisher bit is cleared
    EXPECT_EQ(guest.off(1), 0u);
    EXPECT_EQ(guest.area()->publishers, 0u);
    EXPECT_FALSE(switches.set(1, kVcpuOffPreempted));  // detached: records only
    EXPECT_EQ(guest.off(1), 0u);
}

TEST_F(Fixture, WaitsForTheLayoutAndWritesEverythingAgainAfterAReboot) {
    GuestRegion guest(path, /*lay_out=*/false);  // QEMU created the file, the guest is booting
    VcpuStateWriter writer(path, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0, 3});
    EXPECT_EQ(writer.refresh(), VcpuStateWriter::State::kWaiting);
    EXPECT_NE(writer.why().find("not laid out"), std::string::npos) << writer.why();
    EXPECT_FALSE(writer.set(3, kVcpuOffFrozen));  // recorded, not stored
    guest.layout();
    EXPECT_EQ(writer.refresh(), VcpuStateWriter::State::kAttached);
    EXPECT_EQ(guest.off(3), kVcpuOffFrozen);  // written on attach
    // A stale bit of ours that survived a reboot's zeroing is put right too.
    EXPECT_TRUE(writer.set(3, 0));
    guest.layout();  // reboot: generation changes, the area is zeroed
    __atomic_store_n(&guest.area()->cpu[3].off, kVcpuOffFrozen, __ATOMIC_RELAXED);
    EXPECT_EQ(writer.refresh(), VcpuStateWriter::State::kAttached);
    EXPECT_EQ(guest.off(3), 0u);
    EXPECT_EQ(guest.area()->publishers, kVcpuStatePublisherFreezes);
}

TEST_F(Fixture, AHostileHeaderIsRefusedNamingTheFieldAndNothingIsWritten) {
    GuestRegion guest(path);
    RegionHeader* h = guest.header();
    // The guest points the vCPU state section at its clock area (the host would scribble it).
    h->sections[uint32_t(RegionSection::kVcpuState)].offset = h->sections[uint32_t(RegionSection::kClock)].offset;
    std::vector<uint8_t> before(guest.base(), guest.base() + kRegionPageSize);
    VcpuStateWriter writer(path, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0});
    EXPECT_EQ(writer.refresh(), VcpuStateWriter::State::kRefused);
    EXPECT_NE(writer.why().find("the section table"), std::string::npos) << writer.why();
    EXPECT_FALSE(writer.set(0, kVcpuOffFrozen));
    writer.detach();
    EXPECT_EQ(std::memcmp(before.data(), guest.base(), before.size()), 0);
    // A section past the end of the file, and an old kernel's ABI, likewise.
    guest.layout();
    guest.header()->generation += 2;
    guest.header()->sections[uint32_t(RegionSection::kVcpuState)].offset = ~0ull - 63;
    VcpuStateWriter w2(path, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0});
    EXPECT_EQ(w2.refresh(), VcpuStateWriter::State::kRefused);
    guest.layout();
    guest.header()->abi_version = 1;
    VcpuStateWriter w3(path, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0});
    EXPECT_EQ(w3.refresh(), VcpuStateWriter::State::kRefused);
    EXPECT_NE(w3.why().find("region ABI 1"), std::string::npos) << w3.why();
}

TEST_F(Fixture, TheFileMustBeARegularFileNotALink) {
    GuestRegion guest(path);
    const std::string link = dir.path() + "/link";
    ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
    try {
        VcpuStateWriter writer(link, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0});
        FAIL() << "a symbolic link was followed";
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    EXPECT_THROW(VcpuStateWriter(dir.path(), kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0}), LoadError);
    EXPECT_THROW(VcpuStateWriter(dir.path() + "/missing", kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0}),
                 LoadError);
    const std::string fifo = dir.path() + "/fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    try {
        VcpuStateWriter writer(fifo, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0});
        FAIL() << "a FIFO was accepted";
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    const std::string small = dir.path() + "/small";
    std::ofstream(small) << "tiny";
    EXPECT_THROW(VcpuStateWriter(small, kVcpuStatePublisherFreezes, kVcpuOffFrozen, {0}), LoadError);
}

}  // namespace
}  // namespace spinlab::load
