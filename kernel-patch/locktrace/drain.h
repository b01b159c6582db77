// locktrace/drain.h: the host side of the buffer protocol (spinlab/trace.h): taking full buffers
// and giving them back (real-time and no-drop-stall), and reading the newest buffers in place
// (circular). Pure, freestanding: the collector's drainer, the host tests and the guest's
// selftest use it.
//
// The guest is not trusted (docs/architecture.md, "What the host trusts"). Every function here
// takes the session's geometry from `h`, a header the caller copied and checked once with
// area_parse (trace_session.h), never from the area again; every guest word it needs (produced,
// overwritten) is loaded once into a local and checked against the host's own DrainCursor
// before it is used. A guest that breaks the protocol gets TakeResult::kCorrupt and a
// DrainError naming the field; nothing outside [area, area + h.area_size) is read or written
// and nothing beyond h.session.buffer_size bytes is copied into dst.
#pragma once

#include <spinlab/enum_names.h>
#include <spinlab/trace.h>
#include <stdint.h>

namespace spinlab::locktrace {

// What a guest did that the protocol forbids (all but kNone are a corrupt region).
// One row per error: X(enumerator, value, phrase: the field and what is wrong with it);
// drain_error_name() gives the phrase ("produced went backwards").
#define SPINLAB_DRAIN_ERRORS(X)                                                                    \
    X(kNone, 0, "ok")                                                                              \
    X(kBadCpu, 1, "no such CPU in the session")  /* at or above cpu_count: the caller's bug */     \
    X(kProducedBackwards, 2, "produced went backwards")  /* below a value accepted before */       \
    X(kProducedAhead, 3, "produced is more than buffers_per_cpu ahead of consumed")                \
    X(kConsumedAhead, 4, "consumed is above produced")  /* at attach */                            \
    X(kOverwrittenBackwards, 5, "overwritten went backwards")  /* below a value accepted before */ \
    X(kOverwrittenAhead, 6, "overwritten is above produced")                                       \
    X(kSlotOutOfRange, 7, "a slot-table entry is not below buffers_per_cpu")
SPINLAB_DENSE_ENUM(DrainError, uint32_t, SPINLAB_DRAIN_ERRORS, kDrainErrorNames, drain_error_name);

// The host's own state of one CPU's queue. consumed is the host's count of buffers taken (the
// area's `consumed` is only the copy the CPU reads); produced and overwritten are the last values
// accepted. Counters only grow during a session, so a fresh guest value is checked against these.
struct DrainCursor {
    uint64_t consumed = 0;
    uint64_t produced = 0;
    uint64_t overwritten = 0;
};

// Starts a cursor from the area's counters once (a recorder that attaches to a running session
// takes over where the last one stopped). kConsumedAhead / kOverwrittenAhead / kProducedAhead
// (not circular: more than buffers_per_cpu queued) when they cannot be a session's counters.
DrainError cursor_init(const void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c);

enum class TakeResult : uint32_t {
    kEmpty = 0,  // no full buffer queued
    kTaken,      // *len bytes of a checked buffer copied into dst
    kBad,        // the oldest buffer failed its checks: counted in realtime_buffers_lost, given back
    kCorrupt,    // the CPU's counters break the protocol: *err says which; nothing was taken
};

// Takes CPU `cpu`'s oldest full buffer: finds its slot in the CPU's slot table (kCorrupt,
// kSlotOutOfRange when the entry is not a reserved slot), copies it into dst (room for
// h.session.buffer_size bytes), checks it (parse_buffer, and that it is the buffer this CPU should have published
// next in this session), then gives the slot back (consumed + 1, release).
TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c,
                       uint8_t* dst, uint32_t* len, DrainError* err);

// The same with a cursor started from the area's counters at each call (cursor_init): what one
// reading can check (consumed <= produced <= consumed + buffers_per_cpu), not what needs a
// history (went backwards). For tests and tools over an area they wrote themselves; the collector
// keeps a cursor per CPU. A protocol break is kCorrupt, as above.
TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       uint32_t* len);

// Circular: copies every published buffer of `cpu` still intact, oldest first, into dst one at
// a time and calls emit(arg, dst, len) for each one that stayed intact during the copy. Returns
// how many were overwritten (torn) while it read, or had a slot-table entry outside the slots:
// buffers the reader failed to deliver (the caller counts them: count_realtime_lost). Also usable on a stopped real-time session (it then
// reads what the host has not taken: buffers from c->consumed on). On a protocol break *err is
// set and nothing is emitted.
using EmitFn = void (*)(void* arg, const uint8_t* data, uint32_t len);
uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c,
                       uint8_t* dst, EmitFn emit, void* arg, DrainError* err);

// The same from a cursor started with cursor_init (the guest's selftest reads its own area this
// way); a protocol break reads nothing.
uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       EmitFn emit, void* arg);

// RealTimeBuffersLost of CPU `cpu` += n: buffers the host took or read but failed to deliver
// (a torn copy, a file write that failed). The host is the only writer of the field.
void count_realtime_lost(void* area, const TraceAreaHeader& h, uint32_t cpu, uint64_t n);

// NumberOfBuffers of CPU `cpu`: its buffers_allocated now (a plain number, clamped to the
// reserved slots so a hostile guest cannot make it more than buffers_per_cpu).
uint32_t cpu_buffers_allocated(const void* area, const TraceAreaHeader& h, uint32_t cpu);

// CPU `cpu`'s loss counters as the area has them now (plain numbers: skewed while it writes,
// never an address or a length). cpu < h.session.cpu_count.
TraceLossCounters cpu_loss_counters(const void* area, const TraceAreaHeader& h, uint32_t cpu);

// total += one CPU's loss counters (the one place that knows the fields to sum).
inline void add_loss(TraceLossCounters& total, const TraceLossCounters& cpu) {
    total.events_attempted += cpu.events_attempted;
    total.events_written += cpu.events_written;
    total.events_lost += cpu.events_lost;
    total.buffers_written += cpu.buffers_written;
    total.log_buffers_lost += cpu.log_buffers_lost;
    total.realtime_buffers_lost += cpu.realtime_buffers_lost;
}

// cpu_loss_counters summed over the session's CPUs (h.session.cpu_count, the checked copy).
TraceLossCounters area_totals(const void* area, const TraceAreaHeader& h);

}  // namespace spinlab::locktrace
