// collector/trace/trace_control.h: a trace session over the control channel (class 0x1F, sub-class
// kSpinlabTraceSession; spinlab/trace.h): query, start, stop, flush. The guest's one sysinfo handler
// decides; these only carry the request and the answer.
#pragma once
#include <spinlab/status.h>
#include <spinlab/trace.h>

#include <optional>

#include "session.h"

namespace spinlab::collect {

// The live session (state, parameters, loss totals). Throws CollectError(kExitFailure) when
// the guest does not answer it (an INSTRUMENT=0 kernel has no sessions: the message says so).
TraceSessionInformation query_trace_session(Session& s);

// Starts a session with `params` (command is set here). The guest's status: kSuccess, or
// kInvalidParameter / kAccessDenied / ... with nothing changed.
Status start_trace_session(Session& s, TraceSessionInformation params);

// Stops the running session: every CPU flushes its last buffer and the configuration event is
// written. kInvalidParameter when none runs.
Status stop_trace_session(Session& s);

// Every CPU publishes its partly filled buffer now (the guest answers once all did); the
// session keeps running. kInvalidParameter when none runs.
Status flush_trace_session(Session& s);

// The call-stack settings for the next start (sub-class kSpinlabTraceStacks): the guest's status
// (kInvalidParameter with nothing changed, also while a session runs).
Status set_trace_stacks(Session& s, TraceStackInformation settings);
// The settings as clamped and the current or last session's cache counters; nullopt when the
// guest has no stacks (an older or INSTRUMENT=0 kernel).
std::optional<TraceStackInformation> query_trace_stacks(Session& s);

// Why a start was refused, as a phrase ("session 3 is already running (trace stop first)").
std::string start_refusal(Session& s, const TraceSessionInformation& params, Status status);

}  // namespace spinlab::collect
