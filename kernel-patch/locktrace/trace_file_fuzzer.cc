// locktrace/trace_file_fuzzer.cc: libFuzzer target: the trace file reader and the buffer parser
// on arbitrary bytes (as `trace dump` reads a file: header, frames, buffers, events).
#include <stddef.h>
#include <stdint.h>

#include "buffer_parser.h"
#include "trace_file.h"

using namespace spinlab;
using namespace spinlab::locktrace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The raw bytes as one buffer, too (the drainer parses copies of guest memory).
    BufferView v;
    if (parse_buffer(data, size, &v) == BufferError::kNone) {
        uint64_t sum = 0;
        for_each_event(v, [&](const TraceEventHeader& h, const uint8_t*) { sum += h.size; });
        if (sum != v.events_bytes) __builtin_trap();
    }
    TraceFileHeader h;
    if (parse_file_header(data, size, &h) != FileError::kNone) return 0;
    size_t off = sizeof h;
    FrameView f;
    while (next_frame(data, size, &off, &f) == FileError::kNone) {
        if (off > size) __builtin_trap();
        if (f.kind == TraceFrameKind::kBuffer && parse_buffer(f.payload, f.length, &v) == BufferError::kNone) {
            uint32_t n = 0;
            for_each_event(v, [&](const TraceEventHeader& e, const uint8_t*) {
                if (trace_event_has_frames(e.type) ? e.size < trace_event_size(e.type)
                                                   : trace_event_size(e.type) != e.size)
                    __builtin_trap();
                n++;
            });
            if (n != v.header.event_count) __builtin_trap();
        }
    }
    return 0;
}
