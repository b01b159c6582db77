// locktrace/writer.cc: see writer.h and the protocol in spinlab/trace.h.
#include "writer.h"

#include "trace_session.h"

namespace spinlab::locktrace {

namespace lc = lockstat;

void writer_arm(Writer& w, void* area, uint32_t cpu) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    w.ctl = area_control(area, cpu);
    w.buffers = area_buffer(area, cpu, 0);
    w.buffer_size = h->session.buffer_size;
    w.nbuf = h->session.buffers_per_cpu;
    w.mode = static_cast<TraceLoggerMode>(h->session.logger_mode);
    w.cpu = cpu;
    w.session_id = h->session.session_id;
    w.cur = nullptr;
    w.used = 0;
    w.events = 0;
    w.first_tsc = w.last_tsc = 0;
}

namespace {

// Takes the next slot for writing, if the protocol lets this CPU have it.
bool next_buffer(Writer& w) {
    TraceCpuControl& c = *w.ctl;
    const uint64_t p = __atomic_load_n(&c.produced, __ATOMIC_RELAXED);  // ours
    if (w.mode == TraceLoggerMode::kCircular) {
        const uint64_t o = __atomic_load_n(&c.overwritten, __ATOMIC_RELAXED);  // ours too
        if (p - o >= w.nbuf) {
            // The oldest published buffer goes; a host dumping it in place sees `overwritten`
            // pass its number and drops its copy. Store before we write into the slot.
            __atomic_store_n(&c.overwritten, o + 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_RELEASE);  // x86: a compiler barrier only
            lc::counter_inc(&c.log_buffers_lost);
        }
    } else {
        // Acquire: the host's reads of the slot it gave back happen before our writes to it.
        const uint64_t consumed = __atomic_load_n(&c.consumed, __ATOMIC_ACQUIRE);
        if (p - consumed >= w.nbuf) return false;
    }
    w.cur = w.buffers + (p % w.nbuf) * uint64_t(w.buffer_size);
    w.used = sizeof(TraceBufferHeader);
    w.events = 0;
    w.first_tsc = w.last_tsc = 0;
    return true;
}

void publish(Writer& w, uint32_t flags) {
    TraceCpuControl& c = *w.ctl;
    const uint64_t p = __atomic_load_n(&c.produced, __ATOMIC_RELAXED);
    TraceBufferHeader* h = reinterpret_cast<TraceBufferHeader*>(w.cur);
    h->sequence = p;
    h->session_id = w.session_id;
    h->cpu = w.cpu;
    h->bytes_used = w.used;
    h->event_count = w.events;
    h->flags = flags;
    h->first_tsc = w.first_tsc;
    h->last_tsc = w.last_tsc;
    h->events_lost = __atomic_load_n(&c.events_lost, __ATOMIC_RELAXED);
    h->reserved = 0;
    lc::counter_add(&c.bytes_written, w.used - sizeof(TraceBufferHeader));
    lc::counter_inc(&c.buffers_written);
    // Release: the buffer's contents are visible before the host sees it queued.
    __atomic_store_n(&c.produced, p + 1, __ATOMIC_RELEASE);
    w.cur = nullptr;
}

}  // namespace

void* begin_write_slow(Writer& w, uint32_t size, bool may_stall) {
    if (size < sizeof(TraceEventHeader) || size > w.buffer_size - sizeof(TraceBufferHeader)) {
        lc::counter_inc(&w.ctl->events_lost);
        return nullptr;
    }
    if (w.cur != nullptr) publish(w, 0);  // full: the event does not fit in what is left
    bool stalled = false;
    while (!next_buffer(w)) {
        if (!may_stall || w.mode != TraceLoggerMode::kNoDropStall || w.stall == nullptr ||
            !w.stall(w.stall_arg)) {
            lc::counter_inc(&w.ctl->events_lost);
            return nullptr;
        }
        if (!stalled) lc::counter_inc(&w.ctl->stalls);
        stalled = true;
    }
    return w.cur + w.used;
}

bool flush(Writer& w, uint32_t flags) {
    if (w.cur == nullptr || w.events == 0) return false;
    publish(w, flags | kTraceBufferFlushed);
    return true;
}

}  // namespace spinlab::locktrace
