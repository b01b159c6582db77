// experiments/runner/boot_watch.h: how long the runner waits for a booting guest, and how long
// one channel request may take once it is up. Both follow the machine rather than fixed numbers:
//  - the boot wait, [vm] boot-timeout, is extended while the guest is visibly booting: it runs
//    out only when the guest's console has written nothing for boot-timeout seconds (and never
//    before boot-timeout seconds from the start), up to kMaxBootFactor times boot-timeout. A
//    loaded host or a nested KVM (guest ring 0 ~750x slower) boots the same kernel in minutes,
//    printing all along; a guest that hangs goes quiet and is given up after boot-timeout;
//  - under KVM the boot wait is kKvmFactor times longer: the nested KVM of the project's machines
//    (kvm_pvm, no VMX) prints the kernel's first two lines and then nothing for minutes while it
//    boots (measured: a 381 s boot, silent after its first second, at load 11 on 2 host CPUs),
//    as the in-guest self-tests allow 900 s under KVM against 60-140 s under TCG. Most of that
//    silence was the kernel zeroing its 16 MiB heap and 4 MiB trace area (a page touched first
//    costs ~3 ms there): it no longer does (kern/mem.h), and a quiet boot takes 3 s, not 18 s;
//  - the channel timeout, [vm] channel-timeout, is raised to the measured boot (from starting
//    the VM to the guest answering): a host on which the boot took 40 s answers a request slowly
//    too (a 5 s default failed at load 9-14 on 2 host CPUs, issue 42). It is never lowered.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace spinlab::run {

class BootWatch {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr double kMaxBootFactor = 10;  // the wait's cap: 10 x boot-timeout
    static constexpr double kMaxChannelTimeout = 600;  // as [vm] channel-timeout's range
    static constexpr double kKvmFactor = 10;  // boot-timeout x 10 under KVM (600 s by default)

    // `console`: the guest's console file, as the VM writes it (empty: no extension).
    BootWatch(double boot_timeout_s, double channel_timeout_s, std::string console, Clock::time_point start);

    // Reads the console's size (observe() with it); "" while the wait may go on, else why not:
    // "within 60 s (its console wrote nothing after 4.1 s)".
    std::string check(Clock::time_point now);
    // The console had `bytes` at `now`: more than before is progress.
    void observe(uint64_t bytes, Clock::time_point now);
    // "" while in time, else why not (as check()).
    std::string expired(Clock::time_point now) const;
    // The VM's accelerator once known (vm.json): "kvm" scales the boot wait by kKvmFactor.
    void set_accelerator(const std::string& accel) { factor_ = accel == "kvm" ? kKvmFactor : 1; }
    // The boot wait now: boot-timeout times the accelerator's factor.
    double boot_timeout_s() const { return boot_timeout_s_ * factor_; }
    // The channel timeout to use once the guest was ready at `ready`: [vm] channel-timeout, or
    // the seconds the boot took when that is longer (at most kMaxChannelTimeout).
    double channel_timeout_s(Clock::time_point ready) const;

private:
    double boot_timeout_s_, channel_timeout_s_;
    double factor_ = 1;
    std::string console_;
    Clock::time_point start_, last_progress_;
    uint64_t bytes_ = 0;
};

}  // namespace spinlab::run
