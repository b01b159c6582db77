// locktrace/writer.cc: see writer.h and the protocol in spinlab/trace.h.
#include "writer.h"

#include "trace_session.h"

namespace spinlab::locktrace {

namespace lc = lockstat;

void writer_arm(Writer& w, void* area, uint32_t cpu) {
    const TraceAreaHeader* h = static_cast<const TraceAreaHeader*>(area);
    w.ctl = area_control(area, cpu);
    w.buffers = area_buffer(area, cpu, 0);
    w.slots = area_slots(area, cpu);
    w.buffer_size = h->session.buffer_size;
    w.nbuf = h->session.buffers_per_cpu;
    w.mode = static_cast<TraceLoggerMode>(h->session.logger_mode);
    w.cpu = cpu;
    w.session_id = h->session.session_id;
    w.must_wait = false;
    w.cur = nullptr;
    w.used = 0;
    w.events = 0;
    w.first_tsc = w.last_tsc = 0;
    w.latest_tsc = 0;
}

namespace {

// The slot for buffer p when `in_use` of the CPU's a allocated slots hold buffers nobody gave
// back yet (real-time: queued for the host; circular: published and not overwritten). Grows by
// one slot when all are in use and one is still reserved. Returns false when none is free.
//
// The control words and the slot table lie in the shared region, where the host (or anything
// that maps the region) can write: a slot outside the CPU's nbuf reserved ones is refused as
// none free (the event is lost, counted), so no write ever leaves this CPU's buffers whatever
// the region holds. Seen: a scribbled slot table entry sent lockbench's ring take to write at
// 0x7b1ab66d7058 (a page fault, the guest gone).
bool pick_slot(Writer& w, uint64_t p, uint64_t in_use, uint32_t* slot) {
    TraceCpuControl& c = *w.ctl;
    const uint64_t a = __atomic_load_n(&c.buffers_allocated, __ATOMIC_RELAXED);  // ours
    uint64_t s;
    if (in_use < a) {
        // The slot of buffer p - a, which has left the window of the last a buffers.
        s = p < a ? p : __atomic_load_n(&w.slots[(p - a) % w.nbuf], __ATOMIC_RELAXED);
    } else if (a < w.nbuf) {
        s = a;  // grow: a slot never used in this session
        __atomic_store_n(&c.buffers_allocated, a + 1, __ATOMIC_RELAXED);
    } else {
        return false;
    }
    if (s >= w.nbuf) [[unlikely]] return false;
    *slot = uint32_t(s);
    return true;
}

// Takes the next buffer for writing, if the protocol lets this CPU have one.
bool next_buffer(Writer& w) {
    TraceCpuControl& c = *w.ctl;
    const uint64_t p = __atomic_load_n(&c.produced, __ATOMIC_RELAXED);  // ours
    uint32_t slot;
    if (w.mode == TraceLoggerMode::kCircular) {
        const uint64_t o = __atomic_load_n(&c.overwritten, __ATOMIC_RELAXED);  // ours too
        if (!pick_slot(w, p, p - o, &slot)) {
            // The oldest published buffer goes; a host reading it in place sees `overwritten`
            // pass its number and drops its copy. Store before we write into the slot.
            __atomic_store_n(&c.overwritten, o + 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_RELEASE);  // x86: a compiler barrier only
            lc::counter_inc(&c.log_buffers_lost);
            if (!pick_slot(w, p, p - o - 1, &slot)) return false;  // the slot of buffer o: now free
        }
    } else {
        // Acquire: the host's reads of the slot it gave back happen before our writes to it.
        const uint64_t consumed = __atomic_load_n(&c.consumed, __ATOMIC_ACQUIRE);
        if (!pick_slot(w, p, p - consumed, &slot)) return false;
    }
    // The table entry of buffer p is free: the host reads entries of buffers below p only, and
    // at most nbuf of them (it never reads the entry of p - nbuf, which p reuses, after p is
    // taken: consumed > p - nbuf, or overwritten > p - nbuf in circular mode).
    __atomic_store_n(&w.slots[p % w.nbuf], slot, __ATOMIC_RELAXED);
    w.cur = w.buffers + uint64_t(slot) * w.buffer_size;
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
    // Release: the buffer's contents and its slot-table entry are visible before the host sees
    // it queued.
    __atomic_store_n(&c.produced, p + 1, __ATOMIC_RELEASE);
    w.cur = nullptr;
}

}  // namespace

void* begin_write_slow(Writer& w, uint32_t size, bool may_wait) {
    if (size < sizeof(TraceEventHeader) || size > w.buffer_size - sizeof(TraceBufferHeader)) {
        lc::counter_inc(&w.ctl->events_lost);
        return nullptr;
    }
    if (w.cur != nullptr) publish(w, 0);  // full: the event does not fit in what is left
    if (next_buffer(w)) return w.cur + w.used;
    if (may_wait && w.mode == TraceLoggerMode::kNoDropStall) {
        // Not an attempt yet: the caller comes back (maybe on another CPU) once it waited.
        lc::counter_add(&w.ctl->events_attempted, ~uint64_t{0});  // minus one
        w.must_wait = true;
        return nullptr;
    }
    lc::counter_inc(&w.ctl->events_lost);
    return nullptr;
}

bool flush(Writer& w, uint32_t flags) {
    if (w.cur == nullptr || w.events == 0) return false;
    publish(w, flags | kTraceBufferFlushed);
    return true;
}

}  // namespace spinlab::locktrace
