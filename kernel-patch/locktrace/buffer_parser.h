// locktrace/buffer_parser.h: checking one published trace buffer and walking its events.
// The buffer may come from a running or hostile guest (a copy out of the shared region, or a
// frame of a trace file): nothing in it is trusted before it is checked, nothing outside
// [data, data + len) is read. Pure, freestanding.
#pragma once

#include <spinlab/enum_names.h>
#include <spinlab/trace.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab::locktrace {

// One row per error: X(enumerator, value, phrase for messages).
#define SPINLAB_BUFFER_ERRORS(X)                                                                   \
    X(kNone, 0, "ok")                                                                              \
    X(kTooShort, 1, "shorter than a buffer header")                                                \
    X(kBadBytesUsed, 2, "bytes_used out of range")  /* below the header or beyond the data */      \
    /* an event's size is below the header, not a multiple of 8, or overruns */                    \
    X(kBadEventSize, 3, "event size out of range")                                                 \
    X(kUnknownType, 4, "unknown event type")  /* a type this build does not know */                \
    /* each type has one payload size */                                                           \
    X(kSizeMismatch, 5, "event size differs from its type's")                                      \
    X(kBadCpu, 6, "event of another CPU")  /* the event says another CPU than its buffer */        \
    X(kCountMismatch, 7, "event count differs from the header's")
SPINLAB_DENSE_ENUM(BufferError, uint32_t, SPINLAB_BUFFER_ERRORS, kBufferErrorNames,
                   buffer_error_name);

// The header of a checked buffer and where its events are.
struct BufferView {
    TraceBufferHeader header;
    const uint8_t* events;  // the first event
    uint32_t events_bytes;  // bytes_used - sizeof(TraceBufferHeader)
};

// Checks the header and every event. On kNone `out` is filled; else where the first problem
// was (byte offset into the buffer) is in *where when where is not null.
BufferError parse_buffer(const void* data, size_t len, BufferView* out, uint32_t* where = nullptr);

// Calls f(const TraceEventHeader&, const uint8_t* event) for every event of a buffer that
// parse_buffer accepted; the event pointer may be unaligned (copy before casting).
template <class F>
void for_each_event(const BufferView& v, F&& f) {
    uint32_t off = 0;
    while (off + sizeof(TraceEventHeader) <= v.events_bytes) {
        TraceEventHeader h;
        __builtin_memcpy(&h, v.events + off, sizeof h);
        f(h, v.events + off);
        off += h.size;
    }
}

}  // namespace spinlab::locktrace
