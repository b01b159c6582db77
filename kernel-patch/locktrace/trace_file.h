// locktrace/trace_file.h: the trace file (format drawn in spinlab/trace.h): building its header
// and frames (the collector's one writer), and reading it back frame by frame (trace dump, the
// decoders, the tests). The reader trusts nothing: a file cut short by a crash, or damaged,
// yields every whole frame before the damage and says where it stopped.
#pragma once

#include <spinlab/enum_names.h>
#include <spinlab/trace.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab::locktrace {

TraceFileHeader make_file_header(const TraceSessionInformation& session, uint32_t cpu_count,
                                 uint64_t tsc_hz);
TraceFrameHeader make_frame_header(TraceFrameKind kind, const void* payload, uint32_t length);

// One row per error: X(enumerator, value, phrase for messages).
#define SPINLAB_FILE_ERRORS(X)                                                                     \
    X(kNone, 0, "ok")                                                                              \
    X(kEnd, 1, "end of file")  /* no more frames: the file ends exactly after the last one */      \
    X(kTooShort, 2, "shorter than a trace file header")                                            \
    X(kBadMagic, 3, "not a spinlab trace file")                                                    \
    X(kBadVersion, 4, "trace file of another ABI version")                                         \
    X(kTruncated, 5, "last frame cut short")  /* a crash while writing: ignore the rest */         \
    /* bad frame magic or kind, or a payload over kTraceMaxFramePayload */                         \
    X(kBadFrame, 6, "bad frame header")                                                            \
    X(kBadCrc, 7, "frame checksum mismatch")  /* payload damaged */
SPINLAB_DENSE_ENUM(FileError, uint32_t, SPINLAB_FILE_ERRORS, kFileErrorNames, file_error_name);

inline constexpr uint32_t kTraceMaxFramePayload = kTraceMaxBufferSize + 4096;

FileError parse_file_header(const void* data, size_t len, TraceFileHeader* out);

struct FrameView {
    TraceFrameKind kind;
    const uint8_t* payload;
    uint32_t length;
};

// Reads the frame at *offset (start with sizeof(TraceFileHeader)); on kNone advances *offset
// past it. kEnd at the end of the data.
FileError next_frame(const void* data, size_t len, size_t* offset, FrameView* out);

}  // namespace spinlab::locktrace
