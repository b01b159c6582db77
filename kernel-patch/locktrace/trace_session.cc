// locktrace/trace_session.cc: see trace_session.h.
#include "trace_session.h"

namespace spinlab::locktrace {

const SessionParamInfo kSessionParamInfo[kSessionParamCount] = {
    {"BufferSize", offsetof(TraceSessionInformation, buffer_size), kTraceMinBufferSize,
     kTraceMaxBufferSize, "a multiple of 4096"},
    {"MinimumBuffers", offsetof(TraceSessionInformation, minimum_buffers), kTraceMinBuffers,
     kTraceMaxBuffers, "at most MaximumBuffers"},
    {"MaximumBuffers", offsetof(TraceSessionInformation, maximum_buffers), kTraceMinBuffers,
     kTraceMaxBuffers, ""},
    {"FlushTimer", offsetof(TraceSessionInformation, flush_timer_ms), 0, kTraceMaxFlushTimerMs,
     "in milliseconds, 0 for never"},
    {"LoggerMode", offsetof(TraceSessionInformation, logger_mode), 0, kTraceLoggerModeCount - 1,
     "0 real-time, 1 circular, 2 no-drop-stall"},
    {"EnableFlags", offsetof(TraceSessionInformation, enable_flags), 0, kTraceGroupAll,
     "known group bits only"},
    {"ProfileInterval", offsetof(TraceSessionInformation, profile_interval), 1,
     kTraceMaxProfileInterval, "in timer ticks"},
};

namespace {

uint32_t field_at(const TraceSessionInformation& in, uint32_t offset) {
    uint32_t v;
    __builtin_memcpy(&v, reinterpret_cast<const char*>(&in) + offset, sizeof v);
    return v;
}

constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

constexpr uint32_t kControlOffset = 4096;  // the header has the first page

// The slot tables follow the controls; the buffers start on the next page after them.
uint64_t slots_offset_for(uint32_t cpu_count) {
    return kControlOffset + uint64_t(cpu_count) * sizeof(TraceCpuControl);
}
uint64_t buffers_offset_for(uint32_t cpu_count, uint32_t maximum_buffers) {
    return align_up(slots_offset_for(cpu_count) + uint64_t(cpu_count) * maximum_buffers * 4, 4096);
}

}  // namespace

TraceSessionInformation default_session_params() {
    TraceSessionInformation s;
    __builtin_memset(&s, 0, sizeof s);
    s.event_trace_information_class = kSpinlabTraceSession;
    s.buffer_size = 64 * 1024;
    s.minimum_buffers = 4;
    s.maximum_buffers = 64;
    s.flush_timer_ms = 100;
    s.logger_mode = static_cast<uint32_t>(TraceLoggerMode::kRealTime);
    s.enable_flags = kTraceGroupSpinlock | kTraceGroupLongWait;
    s.profile_interval = 1;
    return s;
}

const SessionParamInfo* first_invalid_session_param(const TraceSessionInformation& in) {
    for (const SessionParamInfo& p : kSessionParamInfo) {
        const uint32_t v = field_at(in, p.offset);
        if (v < p.minimum || v > p.maximum) return &p;
    }
    if (in.buffer_size % 4096 != 0) return &kSessionParamInfo[0];
    if (in.minimum_buffers > in.maximum_buffers) return &kSessionParamInfo[1];
    return nullptr;
}

uint64_t trace_area_needed(uint32_t buffer_size, uint32_t buffers, uint32_t cpu_count) {
    return buffers_offset_for(cpu_count, buffers) + uint64_t(buffer_size) * buffers * cpu_count;
}

bool plan_session(const TraceSessionInformation& in, uint64_t area_size, uint32_t cpu_count,
                  SessionPlan* plan) {
    if (cpu_count == 0) return false;
    const uint64_t first = buffers_offset_for(cpu_count, in.maximum_buffers);
    if (area_size < first) return false;
    const uint64_t fit = (area_size - first) / (uint64_t(in.buffer_size) * cpu_count);
    if (fit < in.minimum_buffers) return false;
    plan->buffers_per_cpu = fit < in.maximum_buffers ? uint32_t(fit) : in.maximum_buffers;
    plan->control_offset = kControlOffset;
    plan->buffers_offset = first;
    plan->slots_offset = slots_offset_for(cpu_count);
    return true;
}

void area_start(void* area, uint64_t area_size, uint32_t cpu_count,
                const TraceSessionInformation& params, const SessionPlan& plan, uint64_t session_id,
                uint64_t start_tsc) {
    TraceAreaHeader* h = static_cast<TraceAreaHeader*>(area);
    const uint64_t seq = __atomic_load_n(&h->magic, __ATOMIC_RELAXED) == kTraceAreaMagic
                             ? __atomic_load_n(&h->seq, __ATOMIC_RELAXED)
                             : 0;
    __atomic_store_n(&h->seq, seq | 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    h->magic = kTraceAreaMagic;
    h->abi_version = kTraceAbiVersion;
    h->header_size = sizeof(TraceAreaHeader);
    h->control_offset = plan.control_offset;
    h->control_stride = sizeof(TraceCpuControl);
    h->buffers_offset = plan.buffers_offset;
    h->slots_offset = plan.slots_offset;
    h->area_size = area_size;
    h->session = params;
    h->session.event_trace_information_class = kSpinlabTraceSession;
    h->session.command = 0;
    h->session.state = static_cast<uint32_t>(TraceState::kRunning);
    h->session.buffers_per_cpu = plan.buffers_per_cpu;
    h->session.cpu_count = cpu_count;
    h->session.session_id = session_id;
    h->session.start_tsc = start_tsc;
    h->session.stop_tsc = 0;
    __builtin_memset(&h->session.totals, 0, sizeof h->session.totals);
    for (uint32_t c = 0; c < cpu_count; c++) {
        TraceCpuControl* k = area_control(area, c);
        __builtin_memset(k, 0, sizeof(TraceCpuControl));
        k->buffers_allocated = params.minimum_buffers;
        __builtin_memset(area_slots(area, c), 0, uint64_t(plan.buffers_per_cpu) * 4);
    }
    __atomic_store_n(&h->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

void area_stop(void* area, uint64_t stop_tsc) {
    TraceAreaHeader* h = static_cast<TraceAreaHeader*>(area);
    const uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&h->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    h->session.state = static_cast<uint32_t>(TraceState::kStopped);
    h->session.stop_tsc = stop_tsc;
    __atomic_store_n(&h->seq, seq + 2, __ATOMIC_RELEASE);
}

TraceLossCounters area_totals(const void* area) {
    TraceLossCounters t;
    __builtin_memset(&t, 0, sizeof t);
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    for (uint32_t c = 0; c < h->session.cpu_count; c++) {
        const TraceCpuControl* k = area_control(const_cast<void*>(area), c);
        t.events_attempted += __atomic_load_n(&k->events_attempted, __ATOMIC_RELAXED);
        t.events_written += __atomic_load_n(&k->events_written, __ATOMIC_RELAXED);
        t.events_lost += __atomic_load_n(&k->events_lost, __ATOMIC_RELAXED);
        t.buffers_written += __atomic_load_n(&k->buffers_written, __ATOMIC_RELAXED);
        t.log_buffers_lost += __atomic_load_n(&k->log_buffers_lost, __ATOMIC_RELAXED);
        t.realtime_buffers_lost += __atomic_load_n(&k->realtime_buffers_lost, __ATOMIC_RELAXED);
    }
    return t;
}

uint32_t area_number_of_buffers(const void* area) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    uint64_t n = 0;
    for (uint32_t c = 0; c < h->session.cpu_count; c++)
        n += __atomic_load_n(&area_control(const_cast<void*>(area), c)->buffers_allocated, __ATOMIC_RELAXED);
    return uint32_t(n);
}

const char* area_parse(const void* area, uint64_t area_size, TraceAreaHeader* out) {
    if (area_size < sizeof(TraceAreaHeader)) return "trace area smaller than its header";
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    const uint64_t s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) return "busy";
    __builtin_memcpy(out, h, sizeof *out);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s1) return "busy";
    if (out->magic != kTraceAreaMagic) return "no trace session since the guest booted";
    if (out->abi_version != kTraceAbiVersion) return "trace ABI version differs from this build's";
    if (out->header_size != sizeof(TraceAreaHeader)) return "trace area header size differs";
    if (out->control_stride != sizeof(TraceCpuControl)) return "trace control size differs";
    const TraceSessionInformation& s = out->session;
    if (s.cpu_count == 0 || s.cpu_count > 64) return "trace area CPU count out of range";
    if (first_invalid_session_param(s) != nullptr) return "trace area parameters out of range";
    if (s.buffers_per_cpu < s.minimum_buffers || s.buffers_per_cpu > s.maximum_buffers)
        return "trace area buffer count out of range";
    const uint64_t controls_end =
        uint64_t(out->control_offset) + uint64_t(out->control_stride) * s.cpu_count;
    const uint64_t slots_end = out->slots_offset + uint64_t(s.buffers_per_cpu) * 4 * s.cpu_count;
    if (out->control_offset < sizeof(TraceAreaHeader) || controls_end > out->slots_offset ||
        out->slots_offset > out->buffers_offset || slots_end > out->buffers_offset ||
        out->control_offset % 64 != 0 || out->buffers_offset % 64 != 0 || out->slots_offset % 4 != 0)
        return "trace area sections overlap or are misaligned";
    const uint64_t buffers_bytes = uint64_t(s.buffer_size) * s.buffers_per_cpu * s.cpu_count;
    if (out->buffers_offset > area_size || buffers_bytes > area_size - out->buffers_offset)
        return "trace buffers lie outside the trace area";
    return nullptr;
}

void session_query(const void* area, const TraceSessionInformation& last, TraceSessionInformation* out) {
    *out = last;
    out->event_trace_information_class = kSpinlabTraceSession;
    out->command = 0;
    if (out->state != uint32_t(TraceState::kIdle)) {
        out->stop_tsc = static_cast<const TraceAreaHeader*>(area)->session.stop_tsc;
        out->totals = area_totals(area);
        out->number_of_buffers = area_number_of_buffers(area);
    }
}

}  // namespace spinlab::locktrace
