// collector/trace/trace_control.cc: see trace_control.h.
#include "trace_control.h"

#include <spinlab/sysinfo.h>

#include <cstring>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

constexpr uint32_t kInfo = uint32_t(InfoClass::kSystemPerformanceTraceInformation);

}  // namespace

TraceSessionInformation query_trace_session(Session& s) {
    TraceSessionInformation q{};
    q.event_trace_information_class = kSpinlabTraceSession;
    CallResult r = s.channel().query(kInfo, kSpinlabTraceSession, bytes_of(q), sizeof q);
    if (r.status != uint32_t(Status::kSuccess) || r.data.size() != sizeof q)
        throw CollectError(kExitFailure, std::string("cannot query the trace session: ") +
                                             status_name(r.status) +
                                             (r.status == uint32_t(Status::kInvalidInfoClass)
                                                  ? " (a kernel built with INSTRUMENT=0 has none)"
                                                  : ""));
    std::memcpy(&q, r.data.data(), sizeof q);
    return q;
}

Status start_trace_session(Session& s, TraceSessionInformation params) {
    params.event_trace_information_class = kSpinlabTraceSession;
    params.command = uint32_t(TraceCommand::kStart);
    return Status(s.channel().set(kInfo, kSpinlabTraceSession, bytes_of(params)).status);
}

Status stop_trace_session(Session& s) {
    TraceSessionInformation p{};
    p.event_trace_information_class = kSpinlabTraceSession;
    p.command = uint32_t(TraceCommand::kStop);
    return Status(s.channel().set(kInfo, kSpinlabTraceSession, bytes_of(p)).status);
}

Status flush_trace_session(Session& s) {
    TraceSessionInformation p{};
    p.event_trace_information_class = kSpinlabTraceSession;
    p.command = uint32_t(TraceCommand::kFlush);
    return Status(s.channel().set(kInfo, kSpinlabTraceSession, bytes_of(p)).status);
}

Status set_trace_stacks(Session& s, TraceStackInformation p) {
    p.event_trace_information_class = kSpinlabTraceStacks;
    return Status(s.channel().set(kInfo, kSpinlabTraceStacks, bytes_of(p)).status);
}

std::optional<TraceStackInformation> query_trace_stacks(Session& s) {
    TraceStackInformation q{};
    q.event_trace_information_class = kSpinlabTraceStacks;
    CallResult r = s.channel().query(kInfo, kSpinlabTraceStacks, bytes_of(q), sizeof q);
    if (r.status != uint32_t(Status::kSuccess) || r.data.size() != sizeof q) return std::nullopt;
    std::memcpy(&q, r.data.data(), sizeof q);
    return q;
}

std::string start_refusal(Session& s, const TraceSessionInformation& p, Status status) {
    std::string why = status_name(uint32_t(status));
    if (status == Status::kInvalidInfoClass) return why;  // no sessions to ask about
    const TraceSessionInformation q = query_trace_session(s);
    if (q.state == uint32_t(TraceState::kRunning))
        why += ": session " + std::to_string(q.session_id) + " is already running (trace stop first)";
    else if (status == Status::kInvalidParameter)
        why += ": fewer than MinimumBuffers = " + std::to_string(p.minimum_buffers) +
               " buffers of BufferSize = " + std::to_string(p.buffer_size) +
               " fit per CPU in the guest's trace area";
    else if (status == Status::kAccessDenied)
        why += ": the channel's caller is not privileged";
    return why;
}

}  // namespace spinlab::collect
