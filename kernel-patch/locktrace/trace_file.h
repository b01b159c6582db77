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
    /* an abi_version no reader below knows (the callers name it: file_abi_version) */           \
    X(kBadVersion, 4, "trace file of an ABI version this build does not read")                     \
    X(kTruncated, 5, "last frame cut short")  /* a crash while writing: ignore the rest */         \
    /* bad frame magic or kind, or a payload over kTraceMaxFramePayload */                         \
    X(kBadFrame, 6, "bad frame header")                                                            \
    X(kBadCrc, 7, "frame checksum mismatch")  /* payload damaged */
SPINLAB_DENSE_ENUM(FileError, uint32_t, SPINLAB_FILE_ERRORS, kFileErrorNames, file_error_name);

inline constexpr uint32_t kTraceMaxFramePayload = kTraceMaxBufferSize + 4096;

// Every trace file version that has shipped, each read by its own reader (trace_file.cc), which
// checks that version's header and gives it as this build's TraceFileHeader; `abi_version` keeps
// the version the file was written in. What changed between versions (git history of
// spinlab/trace.h; the fixtures in analysis/tests/data/old-results/ are real files of each):
//   1  trace ABI 1, 2026-11-23 (1331a2f) to 2026-11-26 16:34 (c3023ae): every CPU had all its
//      buffers_per_cpu buffers from the start; the session's word at 0x34 was `reserved1`.
//      Frames, buffer headers and event payloads are those of version 2, byte for byte.
//   2  trace ABI 2, 2026-11-26 16:38 (6dad811) on: buffers grow on demand into slot tables (the
//      guest's trace area only); the word at 0x34 is `number_of_buffers` (0 in a file: the
//      recorder copies the area's session, which does not keep it).
// A new kTraceAbiVersion adds a row and a reader and keeps the old ones (trace_file.cc checks).
struct TraceFileVersion {
    uint32_t abi_version;
    const char* written;  // by which commits, for messages and docs
    FileError (*read)(const void* data, size_t len, TraceFileHeader* out);
};
FileError read_file_header_v1(const void* data, size_t len, TraceFileHeader* out);
FileError read_file_header_v2(const void* data, size_t len, TraceFileHeader* out);
inline constexpr TraceFileVersion kTraceFileVersions[] = {
    {1, "trace ABI 1 (spinlab of 2026-11-23 to 2026-11-26 16:34, c3023ae)", read_file_header_v1},
    {2, "trace ABI 2 (spinlab of 2026-11-26 16:38, 6dad811, on)", read_file_header_v2},
};
inline constexpr size_t kTraceFileVersionCount = sizeof kTraceFileVersions / sizeof kTraceFileVersions[0];
static_assert(kTraceFileVersions[kTraceFileVersionCount - 1].abi_version == kTraceAbiVersion,
              "a new trace ABI version needs its reader in kTraceFileVersions (keep the old ones)");

// The header of any version above, by the reader of the version the file names: kBadVersion
// when no reader knows it (file_abi_version says which it is).
FileError parse_file_header(const void* data, size_t len, TraceFileHeader* out);

// The abi_version a file's header names (0 when the data is too short to hold one), and the row
// of kTraceFileVersions that reads it (nullptr: none does).
uint32_t file_abi_version(const void* data, size_t len);
const TraceFileVersion* trace_file_version(uint32_t abi_version);

struct FrameView {
    TraceFrameKind kind;
    const uint8_t* payload;
    uint32_t length;
};

// Reads the frame at *offset (start with sizeof(TraceFileHeader)); on kNone advances *offset
// past it. kEnd at the end of the data.
FileError next_frame(const void* data, size_t len, size_t* offset, FrameView* out);

}  // namespace spinlab::locktrace
