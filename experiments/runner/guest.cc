// experiments/runner/guest.cc: see guest.h.
#include "guest.h"

#include <spinlab/status.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "error.h"

namespace spinlab::run {
namespace {

collect::Config attach_config(const std::string& vm_name, const std::string& run_dir, double timeout_s) {
    collect::Config c;
    c.command = "record";
    c.attach.vm = vm_name;
    c.attach.run_dir = run_dir;
    c.source = "region";
    c.timeout_ms = static_cast<int>(timeout_s * 1000);  // [vm] channel-timeout
    return c;
}

}  // namespace

Guest::Guest(const std::string& vm_name, const std::string& run_dir, double channel_timeout_s)
    : session_(attach_config(vm_name, run_dir, channel_timeout_s)) {}

void Guest::wait_ready(std::chrono::milliseconds timeout, const std::function<bool()>& alive) {
    using collect::CollectError;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string last = "no answer";
    for (;;) {
        if (!alive()) throw CollectError(collect::kExitNoVm, "the VM ended while booting (" + last + ")");
        try {
            collect::RegionReader& r = session_.region();  // checks the region's ABI version
            config_ = session_.configuration();             // checks the sysinfo ABI version
            cpus_ = r.layout().cpu_count;
            if (config_.cpu_count != cpus_)
                throw CollectError(collect::kExitAbi,
                                   "the guest reports " + std::to_string(config_.cpu_count) +
                                       " CPUs on the channel and " + std::to_string(cpus_) +
                                       " in its region");
            return;
        } catch (const CollectError& e) {
            if (e.exit_code() == collect::kExitAbi) throw;
            last = e.what();
            session_.drop_channel();
        }
        if (std::chrono::steady_clock::now() > deadline)
            throw CollectError(collect::kExitNoVm, "the guest was not ready within " +
                                                       std::to_string(timeout.count() / 1000) +
                                                       " s: " + last);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
}

uint64_t Guest::tsc_hz() const {
    return const_cast<Guest*>(this)->session_.region().layout().tsc_hz ?: config_.tsc_hz;
}

void Guest::reset_counters() {
    ResetRequest req{kAllCpus, kAllLockClasses};
    collect::CallResult r =
        session_.channel().set(uint32_t(InfoClass::kSpinlabResetCounters), 0,
                               {reinterpret_cast<const uint8_t*>(&req), sizeof req});
    if (r.status != uint32_t(Status::kSuccess))
        throw collect::CollectError(collect::kExitFailure,
                                    std::string("the guest refused to reset its counters: ") +
                                        status_name(r.status));
}

collect::Snapshot Guest::snapshot() { return session_.region().snapshot(); }

collect::ClassNames Guest::class_names() {
    std::string warning;
    return session_.class_names(&warning);
}

std::optional<uint64_t> Guest::guest_tsc_now() {
    auto c = session_.region().clock();
    if (!c || c->count == 0) return std::nullopt;
    return c->guest_tsc;
}

std::optional<collect::ClockSample> Guest::clock_sample() {
    return session_.region().sample_clock(std::chrono::milliseconds(500));
}

bool Guest::collect_long_waits(const collect::ClassNames& names, std::vector<uint64_t>& next_seq,
                               LongWaits& out) {
    next_seq.resize(cpus_, 0);
    for (uint32_t cpu = 0; cpu < cpus_; ++cpu) {
        uint32_t head[1] = {cpu};
        collect::CallResult r;
        try {
            r = session_.channel().query(uint32_t(InfoClass::kSpinlabLongWaits), 0,
                                         {reinterpret_cast<const uint8_t*>(head), sizeof head},
                                         sizeof(LongWaitsReply));
        } catch (const collect::CollectError&) {
            session_.drop_channel();
            return false;
        }
        if (r.status != uint32_t(Status::kSuccess) || r.data.size() != sizeof(LongWaitsReply))
            return false;
        LongWaitsReply reply;
        std::memcpy(&reply, r.data.data(), sizeof reply);
        out.min_cycles = reply.threshold_cycles;
        // entries[i] has ring index first_index + i; skip what we took last time, count what
        // was overwritten before we came back.
        if (reply.first_index > next_seq[cpu]) out.dropped += reply.first_index - next_seq[cpu];
        for (uint32_t i = 0; i < reply.count && i < kLongWaitRingSize; ++i) {
            if (reply.first_index + i < next_seq[cpu]) continue;
            const LongWait& w = reply.entries[i];
            LongWaitEntry e;
            e.cpu = w.waiter_cpu == kNoCpu ? cpu : w.waiter_cpu;
            e.class_name = names.name(w.class_id);
            e.start_tsc = w.start_tsc;
            e.wait_cycles = w.wait_cycles;
            if (w.holder_cpu != kNoCpu) e.holder_cpu = w.holder_cpu;
            e.lhp_class = w.lhp_class < kLhpClassCount ? w.lhp_class : uint32_t(LhpClass::kUnknown);
            out.entries.push_back(e);
        }
        next_seq[cpu] = std::max(next_seq[cpu], reply.first_index + reply.count);
    }
    return true;
}

bool Guest::region_gone() { return session_.region().unlinked(); }

}  // namespace spinlab::run
