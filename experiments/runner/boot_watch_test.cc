// The boot wait follows the guest's console, and the channel timeout the measured boot.
#include "boot_watch.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace spinlab::run {
namespace {

using Clock = BootWatch::Clock;
Clock::time_point at(Clock::time_point t0, double s) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

TEST(BootWatch, AQuietGuestIsGivenUpAfterTheBootTimeout) {
    const auto t0 = Clock::now();
    BootWatch w(60, 5, "", t0);
    EXPECT_EQ(w.expired(at(t0, 59.9)), "");
    EXPECT_EQ(w.expired(at(t0, 60.5)), "within 60 s (vm.boot-timeout = 60 s; its console wrote nothing: not watched)");
}

TEST(BootWatch, AGuestThatKeepsPrintingGetsMoreTimeUntilItGoesQuiet) {
    const auto t0 = Clock::now();
    BootWatch w(60, 5, "", t0);
    for (int s = 0; s <= 150; s += 30) w.observe(uint64_t(100 + s), at(t0, s));  // a line every 30 s
    EXPECT_EQ(w.expired(at(t0, 200)), "");  // 50 s after its last line
    EXPECT_EQ(w.expired(at(t0, 211)), "within 211 s (its console wrote nothing for the last 61 s, "
                                      "more than vm.boot-timeout = 60 s)");
    w.observe(250, at(t0, 100));  // the same size again is no progress
    EXPECT_NE(w.expired(at(t0, 211)), "");
}

TEST(BootWatch, TheExtensionIsCappedAtTenBootTimeouts) {
    const auto t0 = Clock::now();
    BootWatch w(10, 5, "", t0);
    for (int s = 0; s <= 120; ++s) w.observe(uint64_t(s + 1), at(t0, s));
    EXPECT_EQ(w.expired(at(t0, 99)), "");
    EXPECT_EQ(w.expired(at(t0, 101)), "within 101 s (10 x vm.boot-timeout = 10 s, the longest wait while its "
                                      "console still wrote)");
}

TEST(BootWatch, UnderKvmTheWaitIsTenTimesLonger) {
    const auto t0 = Clock::now();
    BootWatch w(60, 5, "", t0);
    w.observe(379, at(t0, 1));  // the kernel's first two lines, then nothing
    EXPECT_NE(w.expired(at(t0, 120)), "");
    w.set_accelerator("kvm");
    EXPECT_DOUBLE_EQ(w.boot_timeout_s(), 600);
    EXPECT_EQ(w.expired(at(t0, 381)), "");  // the measured nested-KVM boot, silent after 1 s
    EXPECT_EQ(w.expired(at(t0, 602)), "within 602 s (its console wrote nothing for the last 601 s, more than "
                                      "vm.boot-timeout x 10 under KVM = 600 s)");
    w.set_accelerator("tcg");
    EXPECT_NE(w.expired(at(t0, 120)), "");
}

TEST(BootWatch, ReadsTheConsoleFileItIsGiven) {
    const std::string path = ::testing::TempDir() + "/boot-watch-console.log";
    std::remove(path.c_str());
    const auto t0 = Clock::now();
    BootWatch w(1, 5, path, t0);
    EXPECT_EQ(w.check(at(t0, 0.5)), "");  // no file yet
    std::ofstream(path) << "spinlab: booting\n";
    EXPECT_EQ(w.check(at(t0, 1.5)), "");  // wrote at 1.5 s
    EXPECT_EQ(w.check(at(t0, 2.4)), "");
    EXPECT_EQ(w.check(at(t0, 2.6)), "within 2.6 s (its console wrote nothing for the last 1.1 s, more than "
                                    "vm.boot-timeout = 1.0 s)");
    std::remove(path.c_str());
}

TEST(BootWatch, TheChannelTimeoutIsRaisedToTheBootNeverLowered) {
    const auto t0 = Clock::now();
    BootWatch w(60, 5, "", t0);
    EXPECT_DOUBLE_EQ(w.channel_timeout_s(at(t0, 2)), 5);
    EXPECT_NEAR(w.channel_timeout_s(at(t0, 41)), 41, 1e-6);
    EXPECT_DOUBLE_EQ(w.channel_timeout_s(at(t0, 5000)), BootWatch::kMaxChannelTimeout);
    BootWatch patient(60, 120, "", t0);
    EXPECT_DOUBLE_EQ(patient.channel_timeout_s(at(t0, 41)), 120);
}

}  // namespace
}  // namespace spinlab::run
