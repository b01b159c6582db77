// locktrace/buffer_parser.cc: see buffer_parser.h.
#include "buffer_parser.h"

namespace spinlab::locktrace {

BufferError parse_buffer(const void* data, size_t len, BufferView* out, uint32_t* where) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    auto fail = [&](BufferError e, uint32_t at) {
        if (where) *where = at;
        return e;
    };
    if (len < sizeof(TraceBufferHeader)) return fail(BufferError::kTooShort, 0);
    TraceBufferHeader h;
    __builtin_memcpy(&h, p, sizeof h);
    if (h.bytes_used < sizeof h || h.bytes_used > len) return fail(BufferError::kBadBytesUsed, 0);
    uint32_t off = sizeof h;
    uint32_t count = 0;
    while (off < h.bytes_used) {
        if (h.bytes_used - off < sizeof(TraceEventHeader)) return fail(BufferError::kBadEventSize, off);
        TraceEventHeader e;
        __builtin_memcpy(&e, p + off, sizeof e);
        if (e.size < sizeof e || e.size % 8 != 0 || e.size > h.bytes_used - off)
            return fail(BufferError::kBadEventSize, off);
        const uint32_t want = trace_event_size(e.type);
        if (want == 0) return fail(BufferError::kUnknownType, off);
        if (trace_event_has_frames(e.type)) {
            // The fixed part, then exactly nframes frames.
            if (e.size < want) return fail(BufferError::kSizeMismatch, off);
            uint16_t nframes;
            __builtin_memcpy(&nframes, p + off + offsetof(TraceStackEvent, nframes), sizeof nframes);
            if (nframes > kTraceMaxStackFrames || e.size != want + 8u * nframes)
                return fail(BufferError::kSizeMismatch, off);
        } else if (want != e.size) {
            return fail(BufferError::kSizeMismatch, off);
        }
        if (e.cpu != h.cpu) return fail(BufferError::kBadCpu, off);
        off += e.size;
        count++;
    }
    if (count != h.event_count) return fail(BufferError::kCountMismatch, off);
    out->header = h;
    out->events = p + sizeof h;
    out->events_bytes = h.bytes_used - uint32_t(sizeof h);
    return BufferError::kNone;
}

}  // namespace spinlab::locktrace
