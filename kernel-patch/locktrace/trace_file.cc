// locktrace/trace_file.cc: see trace_file.h.
#include "trace_file.h"

#include "../channel/crc32c.h"

namespace spinlab::locktrace {

TraceFileHeader make_file_header(const TraceSessionInformation& session, uint32_t cpu_count,
                                 uint64_t tsc_hz) {
    TraceFileHeader h;
    __builtin_memset(&h, 0, sizeof h);
    h.magic = kTraceFileMagic;
    h.abi_version = kTraceAbiVersion;
    h.header_size = sizeof h;
    h.tsc_hz = tsc_hz;
    h.cpu_count = cpu_count;
    h.session = session;
    return h;
}

TraceFrameHeader make_frame_header(TraceFrameKind kind, const void* payload, uint32_t length) {
    return {kTraceFrameMagic, static_cast<uint32_t>(kind), length, crc32c(payload, length)};
}

FileError parse_file_header(const void* data, size_t len, TraceFileHeader* out) {
    if (len < sizeof(TraceFileHeader)) return FileError::kTooShort;
    __builtin_memcpy(out, data, sizeof *out);
    if (out->magic != kTraceFileMagic) return FileError::kBadMagic;
    if (out->abi_version != kTraceAbiVersion || out->header_size != sizeof(TraceFileHeader))
        return FileError::kBadVersion;
    return FileError::kNone;
}

FileError next_frame(const void* data, size_t len, size_t* offset, FrameView* out) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    const size_t off = *offset;
    if (off >= len) return FileError::kEnd;
    if (len - off < sizeof(TraceFrameHeader)) return FileError::kTruncated;
    TraceFrameHeader f;
    __builtin_memcpy(&f, p + off, sizeof f);
    if (f.magic != kTraceFrameMagic || f.length > kTraceMaxFramePayload ||
        (f.kind != uint32_t(TraceFrameKind::kBuffer) && f.kind != uint32_t(TraceFrameKind::kCounters)))
        return FileError::kBadFrame;
    if (len - off - sizeof f < f.length) return FileError::kTruncated;
    const uint8_t* payload = p + off + sizeof f;
    if (crc32c(payload, f.length) != f.crc) return FileError::kBadCrc;
    out->kind = static_cast<TraceFrameKind>(f.kind);
    out->payload = payload;
    out->length = f.length;
    *offset = off + sizeof f + f.length;
    return FileError::kNone;
}

}  // namespace spinlab::locktrace
