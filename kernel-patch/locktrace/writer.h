// locktrace/writer.h: one CPU's event writer over its buffers in the trace area (the CPU side
// of the protocol drawn in spinlab/trace.h). Pure and freestanding: the kernel's locktrace
// layer and the host tests and benchmarks use the same code.
//
// BeginWrite/EndWrite: begin_write() returns room for one event in the buffer being written
// (or null), the caller fills it in place, end_write() counts it. The caller makes the pair
// atomic on its CPU (the kernel: interrupts off); no lock, no atomic read-modify-write.
//
// A null return is a loss (counted in events_lost), except when the caller said it can wait
// (no-drop-stall mode, the kernel: interrupts were on) and no buffer is free: then must_wait is
// set and nothing is counted; the caller waits and calls begin_write again. So every attempt
// is counted once, as written or lost, and per CPU
//     events_written + events_lost == events_attempted.
//
// Buffers: the writer starts with the CPU's buffers_allocated slots (MinimumBuffers) and takes
// one more of the reserved ones (buffers_per_cpu) whenever it needs a buffer and every
// allocated one is in use; the slot of each buffer goes into the CPU's slot table (trace.h).
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "../lockstat/counter.h"

namespace spinlab::locktrace {

struct Writer {
    TraceCpuControl* ctl = nullptr;  // null: no session on this CPU (begin_write not called)
    uint8_t* buffers = nullptr;      // slot 0 of this CPU
    uint32_t* slots = nullptr;       // this CPU's slot table: entry s % nbuf = slot of buffer s
    uint32_t buffer_size = 0;
    uint32_t nbuf = 0;               // slots reserved (buffers_per_cpu)
    TraceLoggerMode mode = TraceLoggerMode::kRealTime;
    uint32_t cpu = 0;
    uint64_t session_id = 0;
    bool must_wait = false;          // the last begin_write returned null for the caller to wait
    // The buffer being written (sequence ctl->produced), or null when none was free.
    uint8_t* cur = nullptr;
    uint32_t used = 0;    // bytes of cur in use, header included
    uint32_t events = 0;  // events in cur
    uint64_t first_tsc = 0;
    uint64_t last_tsc = 0;
    uint64_t latest_tsc = 0;  // the stamp of the last event this CPU wrote, in any buffer
};

// Points w at CPU `cpu`'s control, slot table and buffers of the session laid out in `area`
// (it resumes from the control's counters: arming again continues the same queue).
void writer_arm(Writer& w, void* area, uint32_t cpu);

// The slow path of begin_write (current buffer full or missing).
void* begin_write_slow(Writer& w, uint32_t size, bool may_wait);

// BeginWrite. size: the whole event (header included), a multiple of 8. may_wait: the caller
// can wait for the host when no buffer is free (honoured in no-drop-stall mode only): it then
// gets null with w.must_wait set, nothing counted, and must call begin_write again later.
inline void* begin_write(Writer& w, uint32_t size, bool may_wait = false) {
    w.must_wait = false;
    lockstat::counter_inc(&w.ctl->events_attempted);
    if (w.cur != nullptr && w.used + size <= w.buffer_size) [[likely]]
        return w.cur + w.used;
    return begin_write_slow(w, size, may_wait);
}

// The caller of a begin_write that set must_wait starts waiting (once per event): stalls + 1.
inline void note_stall(Writer& w) { lockstat::counter_inc(&w.ctl->stalls); }

// Room for how many more events of `size` bytes the buffer being written holds (0: full, or no
// buffer: begin_write's slow path is what finds one).
inline uint32_t room_for(const Writer& w, uint32_t size) {
    return w.cur != nullptr && w.used + size <= w.buffer_size ? (w.buffer_size - w.used) / size : 0;
}

// A run of events written back to back at w.cur + w.used (room_for said they fit) and counted
// once, at its end, instead of by a begin_write/end_write pair each: the caller keeps the
// bookkeeping in locals and stores it once (the user rings' take). n: events written, `size`
// bytes each; attempted: attempts to count (those written and those lost), lost: of them the
// lost ones; first_tsc, last_tsc: the stamps of the first and last event written.
inline void end_write_run(Writer& w, uint32_t size, uint32_t n, uint64_t attempted, uint64_t lost,
                          uint64_t first_tsc, uint64_t last_tsc) {
    if (n != 0) {
        if (w.events == 0) w.first_tsc = first_tsc;
        w.last_tsc = last_tsc;
        w.latest_tsc = last_tsc;
        w.used += n * size;
        w.events += n;
        lockstat::counter_add(&w.ctl->events_written, n);
    }
    if (attempted != 0) lockstat::counter_add(&w.ctl->events_attempted, attempted);
    if (lost != 0) lockstat::counter_add(&w.ctl->events_lost, lost);
}

// EndWrite for the event begin_write() just gave room for (its attempt counted there); tsc is
// its header's timestamp.
inline void end_write(Writer& w, uint32_t size, uint64_t tsc) { end_write_run(w, size, 1, 0, 0, tsc, tsc); }

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
