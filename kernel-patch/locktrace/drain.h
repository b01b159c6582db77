// locktrace/drain.h: the host side of the buffer protocol (spinlab/trace.h): taking full buffers
// and giving them back (real-time and no-drop-stall), and reading the newest buffers in place
// (circular). Pure: the collector's drainer, the host tests and the benchmark use it.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

namespace spinlab::locktrace {

enum class TakeResult : uint32_t {
    kEmpty = 0,  // no full buffer queued
    kTaken,      // *len bytes of a checked buffer copied into dst
    kBad,        // the oldest buffer failed its checks: counted in realtime_buffers_lost, given back
};

// Takes CPU `cpu`'s oldest full buffer: copies it into dst (room for h.session.buffer_size
// bytes), checks it (parse_buffer, and that it is the buffer this CPU should have published
// next in this session), then gives the slot back (consumed + 1, release).
TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       uint32_t* len);

// Full buffers waiting for the host on `cpu` (real-time and no-drop-stall).
uint64_t queued_buffers(const void* area, uint32_t cpu);

// Circular: copies every published buffer of `cpu` still intact, oldest first, into dst one at
// a time and calls emit(arg, dst, len) for each one that stayed intact during the copy. Returns
// how many were overwritten while it read. Also usable on a stopped real-time session (it then
// reads what the host has not taken).
using EmitFn = void (*)(void* arg, const uint8_t* data, uint32_t len);
uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       EmitFn emit, void* arg);

}  // namespace spinlab::locktrace
