// locktrace/writer.h: one CPU's event writer over its buffers in the trace area (the CPU side
// of the protocol drawn in spinlab/trace.h). Pure and freestanding: the kernel's locktrace
// layer and the host tests and benchmarks use the same code.
//
// BeginWrite/EndWrite: begin_write() returns room for one event in the buffer being written
// (or null: the event is lost and counted), the caller fills it in place, end_write() counts
// it. The caller makes the pair atomic on its CPU (the kernel: interrupts off); no lock, no
// atomic read-modify-write. Every begin_write() counts one attempt, and exactly one of
// end_write() (written) or a null return (lost) follows, so per CPU
//     events_written + events_lost == events_attempted.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "../lockstat/counter.h"

namespace spinlab::locktrace {

// What a writer does when no buffer is free in no-drop-stall mode and the caller allows a
// stall: called again and again until a buffer is free; returning false gives up (the event
// is lost). The kernel pauses and gives up after a bound; tests yield.
using StallFn = bool (*)(void* arg);

struct Writer {
    TraceCpuControl* ctl = nullptr;  // null: no session on this CPU (begin_write not called)
    uint8_t* buffers = nullptr;      // slot 0 of this CPU
    uint32_t buffer_size = 0;
    uint32_t nbuf = 0;
    TraceLoggerMode mode = TraceLoggerMode::kRealTime;
    uint32_t cpu = 0;
    uint64_t session_id = 0;
    StallFn stall = nullptr;
    void* stall_arg = nullptr;
    // The buffer being written (slot ctl->produced % nbuf), or null when none was free.
    uint8_t* cur = nullptr;
    uint32_t used = 0;    // bytes of cur in use, header included
    uint32_t events = 0;  // events in cur
    uint64_t first_tsc = 0;
    uint64_t last_tsc = 0;
};

// Points w at CPU `cpu`'s control and buffers of the session laid out in `area`.
void writer_arm(Writer& w, void* area, uint32_t cpu);

// The slow path of begin_write (current buffer full or missing).
void* begin_write_slow(Writer& w, uint32_t size, bool may_stall);

// BeginWrite. size: the whole event (header included), a multiple of 8. may_stall: the caller
// is not in a spinlock path and may wait for the host (no-drop-stall mode only).
inline void* begin_write(Writer& w, uint32_t size, bool may_stall = false) {
    lockstat::counter_inc(&w.ctl->events_attempted);
    if (w.cur != nullptr && w.used + size <= w.buffer_size) [[likely]]
        return w.cur + w.used;
    return begin_write_slow(w, size, may_stall);
}

// EndWrite for the event begin_write() just gave room for; tsc is its header's timestamp.
inline void end_write(Writer& w, uint32_t size, uint64_t tsc) {
    if (w.events == 0) w.first_tsc = tsc;
    w.last_tsc = tsc;
    w.used += size;
    w.events++;
    lockstat::counter_inc(&w.ctl->events_written);
}

// Fills a header in place.
inline void fill_header(TraceEventHeader& h, uint16_t size, TraceEventType type, uint32_t cpu,
                        uint32_t thread_id, uint32_t process_id, uint64_t tsc) {
    h.size = size;
    h.type = static_cast<uint16_t>(type);
    h.cpu = static_cast<uint16_t>(cpu);
    h.flags = 0;
    h.thread_id = thread_id;
    h.process_id = process_id;
    h.tsc = tsc;
}

// Publishes the buffer being written if it holds an event (FlushTimer, flush, stop). `flags`:
// kTraceBufferFinal at stop. Returns whether a buffer was published.
bool flush(Writer& w, uint32_t flags);

// FlushTimer: publishes the buffer being written if its first event is at least max_age
// cycles old at `now`.
inline bool flush_if_older(Writer& w, uint64_t now, uint64_t max_age) {
    if (w.cur == nullptr || w.events == 0 || now - w.first_tsc < max_age) return false;
    return flush(w, 0);
}

}  // namespace spinlab::locktrace
