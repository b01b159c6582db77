// channel/frame_codec.h: encoding and incremental decoding of channel frames (spinlab/channel.h).
//
// Freestanding and transport-free: the guest's channel server feeds it bytes from the serial
// port's receive interrupt, the host's collector feeds it bytes from a UNIX socket. Neither side
// can assume a stream starts on a frame boundary (a chardev with wait=off drops what the guest
// wrote before the host connected; the host may connect in the middle of a frame), so the
// decoder hunts for the magic, checks the header's own checksum before trusting any length, and
// after every rejection resumes the hunt one byte after the rejected frame's magic, so a valid
// frame that started inside a truncated one is still found.
#pragma once
#include <spinlab/channel.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

// ---- encoding -------------------------------------------------------------------------------

// Header fields for a request; the encoder fills magic, version, payload length and checksums.
FrameHeader frame_request(FrameOp op, uint32_t request_id, uint32_t info_class, uint32_t sub_class,
                          uint32_t length);
// A response to `request` with a sysinfo status and the handler's return length.
FrameHeader frame_response(const FrameHeader& request, uint32_t status, uint32_t return_length);
// An error frame for `request` (may be null when the header could not be trusted).
FrameHeader frame_error(const FrameHeader* request, FrameError error);

// Writes header + payload into out[0..capacity). Returns the frame's size, or 0 when it does not
// fit or payload_length exceeds kMaxPayload (nothing useful is written then).
uint32_t frame_encode(const FrameHeader& fields, const void* payload, uint32_t payload_length,
                      uint8_t* out, uint32_t capacity);

// As frame_encode, for a payload already in place at out + kFrameHeaderSize (a server lets
// its handler write the answer there, saving a copy of up to kMaxPayload bytes).
uint32_t frame_encode_in_place(const FrameHeader& fields, uint32_t payload_length, uint8_t* out,
                               uint32_t capacity);

// ---- decoding -------------------------------------------------------------------------------

struct FrameDecoderStats {
    uint64_t frames;                                          // frames delivered
    uint64_t skipped_bytes;                                   // discarded while hunting for magic
    uint64_t rejected[static_cast<uint32_t>(FrameError::kCount)];  // by reason
};

// State of one incoming stream. The caller provides the storage so the kernel can use a static
// buffer: it must hold kFrameHeaderSize + max_payload bytes.
struct FrameDecoder {
    uint8_t* buf;
    uint32_t capacity;
    uint32_t max_payload;
    uint32_t fill;       // bytes buffered, buf[0..fill)
    uint32_t delivered;  // size of the frame handed out by the last call, dropped on the next
    bool header_ok;      // buf starts with a header that passed validation
    FrameDecoderStats stats;
};

enum class DecodeEvent : uint8_t {
    kNeedMore,  // all input consumed, no complete frame buffered
    kFrame,     // a valid frame: header and payload
    kRejected,  // a frame was rejected: error says why
};

struct DecodeResult {
    DecodeEvent event;
    size_t consumed;         // input bytes taken by this call; feed the rest in the next call
    FrameError error;        // kRejected
    bool header_valid;       // kRejected: the header's checksum passed, its fields can be echoed
    FrameHeader header;      // kFrame, or kRejected with header_valid
    const uint8_t* payload;  // kFrame: header.payload_length bytes, valid until the next call
};

// Returns false (and leaves the decoder unusable) when storage cannot hold a maximal frame.
bool frame_decoder_init(FrameDecoder* d, uint8_t* storage, uint32_t capacity,
                        uint32_t max_payload);

// Consumes input until one event happens. Call again with the unconsumed rest (and with len 0
// after a kFrame or kRejected: bytes buffered behind a rejected frame may hold further frames)
// until it returns kNeedMore with consumed == len.
DecodeResult frame_decoder_feed(FrameDecoder* d, const uint8_t* data, size_t len);

// The stream went idle past the caller's timeout, or ended: a partially received frame is
// rejected as kTruncated (kNeedMore when nothing but garbage was pending), and the decoder starts
// afresh.
DecodeResult frame_decoder_flush(FrameDecoder* d);

// Validates a complete header on its own (the decoder uses it; the fuzzer and tests too).
FrameError frame_check_header(const FrameHeader& h, uint32_t max_payload);

const char* frame_error_name(FrameError e);

}  // namespace spinlab
