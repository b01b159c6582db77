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

namespace {

// The part every version shares: the magic, the version word, the header's size.
FileError check_common(const void* data, size_t len, uint32_t version, uint32_t header_size,
                       TraceFileHeader* out) {
    if (len < header_size || len < sizeof(TraceFileHeader)) return FileError::kTooShort;
    __builtin_memcpy(out, data, sizeof *out);
    if (out->magic != kTraceFileMagic) return FileError::kBadMagic;
    if (out->abi_version != version || out->header_size != header_size) return FileError::kBadVersion;
    return FileError::kNone;
}

// Version 1's header: the layout of today's, with `reserved1` where number_of_buffers is.
constexpr uint32_t kV1HeaderSize = 192;
constexpr size_t kV1Reserved1 = 32 + 0x34;  // TraceFileHeader.session.reserved1
static_assert(sizeof(TraceFileHeader) == kV1HeaderSize, "version 1 is read into this layout");
static_assert(offsetof(TraceFileHeader, session) + offsetof(TraceSessionInformation, number_of_buffers) ==
                  kV1Reserved1,
              "number_of_buffers sits where version 1 had reserved1");

}  // namespace

FileError read_file_header_v1(const void* data, size_t len, TraceFileHeader* out) {
    if (const FileError e = check_common(data, len, 1, kV1HeaderSize, out); e != FileError::kNone) return e;
    out->session.number_of_buffers = 0;  // was reserved: not known (as in a version 2 file)
    return FileError::kNone;
}

FileError read_file_header_v2(const void* data, size_t len, TraceFileHeader* out) {
    return check_common(data, len, 2, sizeof(TraceFileHeader), out);
}

uint32_t file_abi_version(const void* data, size_t len) {
    if (len < offsetof(TraceFileHeader, abi_version) + sizeof(uint32_t)) return 0;
    uint32_t v;
    __builtin_memcpy(&v, static_cast<const uint8_t*>(data) + offsetof(TraceFileHeader, abi_version), sizeof v);
    return v;
}

const TraceFileVersion* trace_file_version(uint32_t abi_version) {
    for (const TraceFileVersion& v : kTraceFileVersions)
        if (v.abi_version == abi_version) return &v;
    return nullptr;
}

FileError parse_file_header(const void* data, size_t len, TraceFileHeader* out) {
    if (len < sizeof(TraceFileHeader)) return FileError::kTooShort;
    uint64_t magic;
    __builtin_memcpy(&magic, data, sizeof magic);
    if (magic != kTraceFileMagic) return FileError::kBadMagic;
    const TraceFileVersion* v = trace_file_version(file_abi_version(data, len));
    return v ? v->read(data, len, out) : FileError::kBadVersion;
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
