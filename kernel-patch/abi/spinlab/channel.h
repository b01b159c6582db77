// spinlab/channel.h: the frames of the host<->guest control channel.
//
// The channel carries the query/set system-information calls from the host to the guest's
// channel server and the answers back, over a byte stream (a 16550 serial port wired by QEMU to a
// host UNIX socket). A request is shaped exactly like the call a guest program makes:
//
//   query_system_information(info_class, sub_class, buffer, length) -> status, return_length
//   set_system_information  (info_class, sub_class, buffer, length) -> status
//
// Request  = header{kind=request, op, info_class, sub_class, length} + payload (the buffer's
//            input bytes: for set, exactly `length` bytes; for query, at most `length` bytes of
//            input, the rest of the buffer starts zeroed).
// Response = header{kind=response, status, length=return_length} + payload (the output bytes,
//            min(return_length, requested length) of them, none when status is not success).
//            `status` is a sysinfo status code (spinlab/status.h); the handler ran.
// Error    = header{kind=error, status=FrameError} with no payload: the server could not hand
//            the request to the handler (bad checksum, bad length, ...). The request id, class
//            and sub-class are echoed when the header could be trusted, else they are zero.
//
// Byte order is little-endian (both ends are x86-64). All multi-byte fields are naturally aligned.
//
//   offset  size  field
//   0       4     magic          kFrameMagic ("SLCF" in memory order)
//   4       2     version        kChannelVersion; a different version is rejected, never guessed
//   6       1     kind           FrameKind
//   7       1     op             FrameOp (request: query or set; response/error: echoed)
//   8       4     request_id     chosen by the host, echoed by the guest
//   12      4     info_class     spinlab/sysinfo.h information class
//   16      4     sub_class      the buffer's selector where the class has one (for class 0x1F
//                                the EventTraceInformationClass in its first dword), repeated
//                                here for logs and error frames; the handler reads the buffer's.
//   20      4     status         response: sysinfo status; error: FrameError; request: 0
//   24      4     length         request: buffer length; response: return length
//   28      4     payload_length bytes following the header, at most the receiver's limit
//   32      4     payload_crc    CRC-32C (Castagnoli) of the payload bytes (0 bytes: 0)
//   36      4     header_crc     CRC-32C of bytes 0..35
//
// Why two checksums: the header checksum lets a receiver reject a false magic found in garbage
// as soon as 40 bytes are in, instead of waiting for a bogus payload_length worth of bytes.
// Why CRC-32C: it detects every burst of up to 32 bits and all odd bit-error counts, and the
// table-driven version costs a few cycles per byte, nothing next to a serial line.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

inline constexpr uint32_t kFrameMagic = 0x46434C53u;  // bytes 'S' 'L' 'C' 'F'
inline constexpr uint16_t kChannelVersion = 1;
inline constexpr uint32_t kFrameHeaderSize = 40;

// The largest payload the guest's server accepts in a request (a set buffer or a query's input).
inline constexpr uint32_t kMaxRequestPayload = 4096;
// The largest payload anyone sends or accepts: bounds a query's buffer length and a response.
// 1 MiB holds the perf data of every CPU and class; the serial line moves it in seconds, which is
// why bulk reads go through the shared region instead.
inline constexpr uint32_t kMaxPayload = 1u << 20;

enum class FrameKind : uint8_t {
    kRequest = 1,
    kResponse = 2,
    kError = 3,
};

enum class FrameOp : uint8_t {
    kQuery = 1,  // query_system_information
    kSet = 2,    // set_system_information
};

// Why a frame was rejected. Carried in the status field of an error frame, and counted by
// whoever decodes (see FrameDecoderStats). Values are stable: they appear in logs and records.
enum class FrameError : uint32_t {
    kNone = 0,
    kBadHeaderChecksum = 1,   // header_crc mismatch: treated as garbage, resynchronise
    kBadVersion = 2,          // version != kChannelVersion
    kUnknownKind = 3,         // kind is not a FrameKind
    kUnknownOp = 4,           // op is not a FrameOp
    kOversized = 5,           // payload_length (or a query's length) above the receiver's limit
    kBadLength = 6,           // set: payload_length != length; query: payload_length > length
    kBadPayloadChecksum = 7,  // payload_crc mismatch
    kTruncated = 8,           // the stream went idle or ended inside a frame
    kCount = 9,
};

struct FrameHeader {
    uint32_t magic;
    uint16_t version;
    uint8_t kind;
    uint8_t op;
    uint32_t request_id;
    uint32_t info_class;
    uint32_t sub_class;
    uint32_t status;
    uint32_t length;
    uint32_t payload_length;
    uint32_t payload_crc;
    uint32_t header_crc;
};

static_assert(sizeof(FrameHeader) == kFrameHeaderSize, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, version) == 4, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, kind) == 6, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, op) == 7, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, request_id) == 8, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, info_class) == 12, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, sub_class) == 16, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, status) == 20, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, length) == 24, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, payload_length) == 28, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, payload_crc) == 32, "frame header layout is ABI");
static_assert(offsetof(FrameHeader, header_crc) == 36, "frame header layout is ABI");

// The bytes covered by header_crc.
inline constexpr uint32_t kFrameHeaderCrcSpan = offsetof(FrameHeader, header_crc);

}  // namespace spinlab
