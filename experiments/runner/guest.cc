// experiments/runner/guest.cc: see guest.h.
#include "guest.h"

#include <spinlab/status.h>

#include <algorithm>
#include <thread>

#include "hostlib/error.h"
#include "trace/trace_control.h"

namespace spinlab::run {
namespace {

constexpr std::chrono::milliseconds kProbeTimeout{5000};

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

void Guest::wait_ready(const std::function<std::string()>& expired, const std::function<bool()>& alive) {
    using collect::CollectError;
    std::string last = "no answer";
    // A request sent before the guest's channel handler runs is never answered: probe with at
    // most kProbeTimeout a request, then use [vm] channel-timeout (which may be minutes).
    const std::chrono::milliseconds request = session_.channel_timeout();
    session_.set_channel_timeout(std::min(request, kProbeTimeout));
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
            session_.set_channel_timeout(request);
            return;
        } catch (const CollectError& e) {
            if (e.exit_code() == collect::kExitAbi) throw;
            last = e.what();
            session_.drop_channel();
        }
        if (std::string why = expired(); !why.empty())
            throw CollectError(collect::kExitNoVm, "the guest was not ready " + why + ": " + last);
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

void Guest::start_trace(const TraceSessionInformation& params, const TraceStackInformation& stacks) {
    // Every start sets its stack settings (none unless [trace] asks), so none linger from an
    // earlier session. A kernel without stacks refuses the sub-class: that matters only when
    // stacks were asked for.
    if (const Status st = collect::set_trace_stacks(session_, stacks);
        st != Status::kSuccess && (stacks.stack_flags || st != Status::kInvalidInfoClass))
        throw std::runtime_error(std::string("the guest refused the stack settings (trace.stack-*): ") +
                                 status_name(uint32_t(st)) +
                                 (st == Status::kInvalidInfoClass ? " (this kernel has no call stacks)" : ""));
    const Status st = collect::start_trace_session(session_, params);
    if (st == Status::kSuccess) return;
    std::string why = collect::start_refusal(session_, params, st);
    if (st == Status::kInvalidParameter && (params.enable_flags & kTraceGroupSpinlock) &&
        config_.instrument_level != uint32_t(InstrumentLevel::kFull))
        why += " (trace.enable: the spinlock group needs a kernel with full instrumentation; this one is " +
               std::string(instrument_level_name(InstrumentLevel(config_.instrument_level))) + ")";
    else if (st == Status::kInvalidParameter)
        why += " (trace.buffer-size, trace.min-buffers)";
    else if (st == Status::kInvalidInfoClass)
        why += " (this kernel has no trace sessions: built with INSTRUMENT=0?; [trace] enable = none runs without)";
    throw std::runtime_error("the guest refused the trace session: " + why);
}

void Guest::stop_trace() {
    const Status st = collect::stop_trace_session(session_);
    if (st != Status::kSuccess)
        throw collect::CollectError(collect::kExitFailure,
                                    std::string("the guest refused to stop the trace session: ") +
                                        status_name(uint32_t(st)));
}

bool Guest::region_gone() { return session_.region().unlinked(); }

}  // namespace spinlab::run
