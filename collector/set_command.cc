// collector/set_command.cc: `set`: the four EVENT_TRACE_SPINLOCK_INFORMATION parameters.
// Reads the current values first, so a set of one parameter keeps the other three.
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>

#include <cstring>

#include "commands.h"
#include "hostlib/error.h"
#include "lockstat/params.h"

namespace spinlab::collect {
namespace {

constexpr uint32_t kSpinlockSub = uint32_t(EventTraceInformationClass::kEventTraceSpinlockInformation);

uint32_t field_at(const EventTraceSpinlockInformation& p, uint32_t offset) {
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const uint8_t*>(&p) + offset, sizeof v);
    return v;
}

}  // namespace

int run_set(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    EventTraceSpinlockInformation p{};
    p.event_trace_information_class = kSpinlockSub;
    const uint32_t cls = uint32_t(InfoClass::kSystemPerformanceTraceInformation);
    CallResult cur = s.channel().query(cls, kSpinlockSub, bytes_of(p), sizeof p);
    if (cur.status != uint32_t(Status::kSuccess) || cur.data.size() != sizeof p)
        throw CollectError(kExitFailure, std::string("cannot read the current spinlock "
                                                     "parameters: ") + status_name(cur.status));
    std::memcpy(&p, cur.data.data(), sizeof p);
    if (c.spin_threshold) p.spin_threshold = *c.spin_threshold;
    if (c.acquire_sample_rate) p.acquire_sample_rate = *c.acquire_sample_rate;
    if (c.contention_sample_rate) p.contention_sample_rate = *c.contention_sample_rate;
    if (c.hold_threshold) p.hold_threshold = *c.hold_threshold;

    CallResult r = s.channel().set(cls, kSpinlockSub, bytes_of(p));
    if (r.status != uint32_t(Status::kSuccess)) {
        // The guest decides; the ranges come from the same table its handler validates with.
        err << "spinlab-collect: set refused: " << status_name(r.status);
        if (const lockstat::SpinlockParamInfo* bad = lockstat::first_invalid_param(p)) {
            err << ": " << bad->name << " = " << field_at(p, bad->offset)
                << " is below its minimum; permitted range " << bad->minimum
                << " to 4294967295";
        } else if (r.status == uint32_t(Status::kAccessDenied)) {
            err << ": the channel's caller is not privileged";
        }
        err << "\n";
        return kExitFailure;
    }
    out << "SpinLockSpinThreshold        " << p.spin_threshold << "\n"
        << "SpinLockAcquireSampleRate    " << p.acquire_sample_rate << "\n"
        << "SpinLockContentionSampleRate " << p.contention_sample_rate << "\n"
        << "SpinLockHoldThreshold        " << p.hold_threshold << "\n";
    return 0;
}

}  // namespace spinlab::collect
