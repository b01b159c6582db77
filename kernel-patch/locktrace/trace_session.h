// locktrace/trace_session.h: trace session parameters (spinlab/trace.h): validation, and laying out
// the trace area of the shared region for a session. Pure, freestanding: compiled into the
// kernel and into the host tests.
//
// A start is all or nothing: the first field outside its limits is named (the collector and the
// guest tools print "BufferSize must be a multiple of 4096 from 4096 to 1048576"), and nothing
// changes; the area is laid out only once every field is permitted.
#pragma once

#include <spinlab/status.h>
#include <spinlab/trace.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab::locktrace {

// One parameter's Windows-style name (BufferSize, ...: ETW's logger context), position in
// TraceSessionInformation and its limits (the collector's help and error messages print them).
struct SessionParamInfo {
    const char* name;
    uint32_t offset;
    uint32_t minimum;
    uint32_t maximum;
    const char* rule;  // what else must hold, as a phrase ("a multiple of 4096"), or ""
};
constexpr uint32_t kSessionParamCount = 7;
extern const SessionParamInfo kSessionParamInfo[kSessionParamCount];

// The default session: 64 KiB buffers, 4..64 per CPU, flushed after 100 ms, real-time,
// spinlock and long-wait events, a profile sample every tick.
TraceSessionInformation default_session_params();

// The first field that is not permitted (a start's parameters), or null. Checks every field
// against its limits, then MinimumBuffers <= MaximumBuffers, then the enable flags' known bits.
const SessionParamInfo* first_invalid_session_param(const TraceSessionInformation& in);

// What a start lays out in an area of area_size bytes for cpu_count CPUs.
struct SessionPlan {
    uint32_t buffers_per_cpu;  // slots reserved per CPU (MinimumBuffers of them allocated)
    uint32_t control_offset;
    uint64_t buffers_offset;
    uint64_t slots_offset;     // the slot tables, sized for MaximumBuffers per CPU
};

// Slots reserved per CPU: as many as fit, at most MaximumBuffers. Returns false (plan
// untouched) when fewer than MinimumBuffers fit. `in` must be valid
// (first_invalid_session_param == null).
bool plan_session(const TraceSessionInformation& in, uint64_t area_size, uint32_t cpu_count,
                  SessionPlan* plan);

// Bytes of trace area a session with these parameters needs for cpu_count CPUs with
// `buffers` buffers each (MaximumBuffers = buffers; to size a region: region_size_needed's
// trace_bytes).
uint64_t trace_area_needed(uint32_t buffer_size, uint32_t buffers, uint32_t cpu_count);

// Lays out the area for a new session (header under seq, controls zeroed with MinimumBuffers
// allocated per CPU, slot tables zeroed; buffers are not touched) and marks it running. The CPUs must not write yet (they start when they see their
// writer armed).
void area_start(void* area, uint64_t area_size, uint32_t cpu_count,
                const TraceSessionInformation& params, const SessionPlan& plan, uint64_t session_id,
                uint64_t start_tsc);

// Marks the session stopped (state, stop_tsc), under seq.
void area_stop(void* area, uint64_t stop_tsc);

// The guest's addressing (the writer and area_start): from the area's own header, which the
// guest trusts. The host never uses these; drain.h addresses from a checked copy.
inline TraceCpuControl* area_control(void* area, uint32_t cpu) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    return reinterpret_cast<TraceCpuControl*>(static_cast<uint8_t*>(area) + h->control_offset +
                                              uint64_t(h->control_stride) * cpu);
}
inline uint32_t* area_slots(void* area, uint32_t cpu) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    return reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(area) + h->slots_offset) +
           uint64_t(cpu) * h->session.buffers_per_cpu;
}
inline uint8_t* area_buffer(void* area, uint32_t cpu, uint32_t index) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    return static_cast<uint8_t*>(area) + h->buffers_offset +
           (uint64_t(cpu) * h->session.buffers_per_cpu + index) * h->session.buffer_size;
}

// Sums the CPUs' loss counters (skewed while they write). The guest's (its own area, addressed
// through its own header); the host sums from a checked copy: drain.h's area_totals(area, h).
TraceLossCounters area_totals(const void* area);
// NumberOfBuffers: the CPUs' buffers_allocated summed (the guest's own area).
uint32_t area_number_of_buffers(const void* area);

// A session query's answer (the guest's): `last`, the parameters of the current or last session
// as started, with the live stop time, loss totals and NumberOfBuffers from the area once a
// session has run.
void session_query(const void* area, const TraceSessionInformation& last, TraceSessionInformation* out);

// Reader (host; the area may be written by a running or hostile guest): copies the header
// consistently (seqcount) and checks that everything it describes lies inside area_size bytes.
// Returns null on success, else what is wrong ("busy": a start or stop is in progress, retry).
const char* area_parse(const void* area, uint64_t area_size, TraceAreaHeader* out);

}  // namespace spinlab::locktrace
