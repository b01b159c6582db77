// channel/frame_codec.cc: see frame_codec.h. What must hold: the decoder never reads past
// buf[fill) or writes past buf[capacity), never trusts a length before the header checksum
// passed, and never loses a valid frame that follows garbage or a rejected frame.
#include "frame_codec.h"

#include "crc32c.h"

namespace spinlab {
namespace {

constexpr uint8_t kMagicBytes[4] = {
    uint8_t(kFrameMagic), uint8_t(kFrameMagic >> 8), uint8_t(kFrameMagic >> 16),
    uint8_t(kFrameMagic >> 24)};

bool is_known_kind(uint8_t k) {
    return k == uint8_t(FrameKind::kRequest) || k == uint8_t(FrameKind::kResponse) ||
           k == uint8_t(FrameKind::kError);
}

bool is_known_op(uint8_t op) { return op == uint8_t(FrameOp::kQuery) || op == uint8_t(FrameOp::kSet); }

FrameHeader read_header(const uint8_t* p) {
    FrameHeader h;
    __builtin_memcpy(&h, p, sizeof h);
    return h;
}

// Drops buf[0..n), keeping what follows.
void drop_front(FrameDecoder* d, uint32_t n) {
    if (n >= d->fill) {
        d->fill = 0;
    } else {
        __builtin_memmove(d->buf, d->buf + n, d->fill - n);
        d->fill -= n;
    }
    d->header_ok = false;
}

// Drops leading bytes until buf starts with the magic (or, when short, with a prefix of it).
void hunt_buffered(FrameDecoder* d) {
    uint32_t start = 0;
    while (start < d->fill) {
        uint32_t avail = d->fill - start;
        uint32_t n = avail < 4 ? avail : 4;
        bool match = true;
        for (uint32_t i = 0; i < n && match; ++i) match = d->buf[start + i] == kMagicBytes[i];
        if (match) break;
        ++start;
    }
    if (start > 0) {
        d->stats.skipped_bytes += start;
        drop_front(d, start);
    }
}

DecodeResult reject(FrameDecoder* d, DecodeResult r, FrameError e, bool header_valid) {
    r.event = DecodeEvent::kRejected;
    r.error = e;
    r.header_valid = header_valid;
    r.header = read_header(d->buf);
    d->stats.rejected[uint32_t(e)]++;
    // Resume one byte after this frame's magic: a frame may start inside the rejected bytes.
    drop_front(d, 1);
    return r;
}

}  // namespace

FrameHeader frame_request(FrameOp op, uint32_t request_id, uint32_t info_class, uint32_t sub_class,
                          uint32_t length) {
    FrameHeader h{};
    h.kind = uint8_t(FrameKind::kRequest);
    h.op = uint8_t(op);
    h.request_id = request_id;
    h.info_class = info_class;
    h.sub_class = sub_class;
    h.length = length;
    return h;
}

FrameHeader frame_response(const FrameHeader& request, uint32_t status, uint32_t return_length) {
    FrameHeader h{};
    h.kind = uint8_t(FrameKind::kResponse);
    h.op = request.op;
    h.request_id = request.request_id;
    h.info_class = request.info_class;
    h.sub_class = request.sub_class;
    h.status = status;
    h.length = return_length;
    return h;
}

FrameHeader frame_error(const FrameHeader* request, FrameError error) {
    FrameHeader h{};
    h.kind = uint8_t(FrameKind::kError);
    // An untrusted header's op may be anything; echo it only when it is one we know, so the
    // error frame itself always decodes.
    h.op = uint8_t(FrameOp::kQuery);
    if (request != nullptr) {
        if (is_known_op(request->op)) h.op = request->op;
        h.request_id = request->request_id;
        h.info_class = request->info_class;
        h.sub_class = request->sub_class;
    }
    h.status = uint32_t(error);
    return h;
}

uint32_t frame_encode_in_place(const FrameHeader& fields, uint32_t payload_length, uint8_t* out,
                               uint32_t capacity) {
    if (payload_length > kMaxPayload) return 0;
    if (capacity < kFrameHeaderSize || capacity - kFrameHeaderSize < payload_length) return 0;
    FrameHeader h = fields;
    h.magic = kFrameMagic;
    h.version = kChannelVersion;
    h.payload_length = payload_length;
    h.payload_crc = crc32c(out + kFrameHeaderSize, payload_length);
    h.header_crc = crc32c(&h, kFrameHeaderCrcSpan);
    __builtin_memcpy(out, &h, sizeof h);
    return kFrameHeaderSize + payload_length;
}

uint32_t frame_encode(const FrameHeader& fields, const void* payload, uint32_t payload_length,
                      uint8_t* out, uint32_t capacity) {
    if (payload_length > kMaxPayload) return 0;
    if (capacity < kFrameHeaderSize || capacity - kFrameHeaderSize < payload_length) return 0;
    if (payload_length > 0) __builtin_memcpy(out + kFrameHeaderSize, payload, payload_length);
    return frame_encode_in_place(fields, payload_length, out, capacity);
}

FrameError frame_check_header(const FrameHeader& h, uint32_t max_payload) {
    if (h.magic != kFrameMagic || crc32c(&h, kFrameHeaderCrcSpan) != h.header_crc)
        return FrameError::kBadHeaderChecksum;
    if (h.version != kChannelVersion) return FrameError::kBadVersion;
    if (!is_known_kind(h.kind)) return FrameError::kUnknownKind;
    if (!is_known_op(h.op)) return FrameError::kUnknownOp;
    if (h.payload_length > max_payload || h.payload_length > kMaxPayload)
        return FrameError::kOversized;
    // A query's length is the size of the answer it asks for: bounded like any payload.
    if (h.kind == uint8_t(FrameKind::kRequest) && h.length > kMaxPayload)
        return FrameError::kOversized;
    switch (FrameKind(h.kind)) {
        case FrameKind::kRequest:
            if (h.op == uint8_t(FrameOp::kSet) ? h.payload_length != h.length
                                               : h.payload_length > h.length)
                return FrameError::kBadLength;
            break;
        case FrameKind::kResponse:
            if (h.payload_length > h.length) return FrameError::kBadLength;
            break;
        case FrameKind::kError:
            if (h.payload_length != 0) return FrameError::kBadLength;
            break;
    }
    return FrameError::kNone;
}

bool frame_decoder_init(FrameDecoder* d, uint8_t* storage, uint32_t capacity,
                        uint32_t max_payload) {
    *d = FrameDecoder{};
    if (storage == nullptr || max_payload > kMaxPayload || capacity < kFrameHeaderSize ||
        capacity - kFrameHeaderSize < max_payload)
        return false;
    d->buf = storage;
    d->capacity = capacity;
    d->max_payload = max_payload;
    return true;
}

DecodeResult frame_decoder_feed(FrameDecoder* d, const uint8_t* data, size_t len) {
    DecodeResult r{};
    r.event = DecodeEvent::kNeedMore;
    if (d->buf == nullptr) return r;
    if (d->delivered != 0) {
        drop_front(d, d->delivered);
        d->delivered = 0;
    }
    for (;;) {
        hunt_buffered(d);
        if (d->fill == 0) {
            // Nothing buffered: skip input up to the next byte that can start a magic without
            // copying it, so a long run of garbage costs one comparison per byte.
            size_t i = r.consumed;
            while (i < len && data[i] != kMagicBytes[0]) ++i;
            d->stats.skipped_bytes += i - r.consumed;
            r.consumed = i;
        }
        uint32_t need = kFrameHeaderSize;
        if (d->fill >= kFrameHeaderSize) {
            FrameHeader h = read_header(d->buf);
            if (!d->header_ok) {
                FrameError e = frame_check_header(h, d->max_payload);
                if (e != FrameError::kNone)
                    return reject(d, r, e, e != FrameError::kBadHeaderChecksum);
                d->header_ok = true;
            }
            need = kFrameHeaderSize + h.payload_length;
            if (d->fill >= need) {
                if (crc32c(d->buf + kFrameHeaderSize, h.payload_length) != h.payload_crc)
                    return reject(d, r, FrameError::kBadPayloadChecksum, true);
                r.event = DecodeEvent::kFrame;
                r.header = h;
                r.payload = d->buf + kFrameHeaderSize;
                d->delivered = need;
                d->stats.frames++;
                return r;
            }
        }
        if (r.consumed == len) return r;
        // Copy no more than the current stage needs, so buf never holds bytes of two frames
        // unless a rescan put them there (handled by `delivered`).
        size_t take = need - d->fill;
        if (take > len - r.consumed) take = len - r.consumed;
        __builtin_memcpy(d->buf + d->fill, data + r.consumed, take);
        d->fill += uint32_t(take);
        r.consumed += take;
    }
}

DecodeResult frame_decoder_flush(FrameDecoder* d) {
    DecodeResult r{};
    r.event = DecodeEvent::kNeedMore;
    if (d->buf == nullptr) return r;
    if (d->delivered != 0) {
        drop_front(d, d->delivered);
        d->delivered = 0;
    }
    hunt_buffered(d);
    if (d->fill >= 4) {
        // A magic was seen: a frame started and did not finish.
        r.event = DecodeEvent::kRejected;
        r.error = FrameError::kTruncated;
        r.header_valid = d->header_ok;
        if (d->fill >= kFrameHeaderSize) r.header = read_header(d->buf);
        d->stats.rejected[uint32_t(FrameError::kTruncated)]++;
    } else {
        d->stats.skipped_bytes += d->fill;
    }
    d->fill = 0;
    d->header_ok = false;
    return r;
}

const char* frame_error_name(FrameError e) {
    switch (e) {
        case FrameError::kNone: return "none";
        case FrameError::kBadHeaderChecksum: return "bad header checksum";
        case FrameError::kBadVersion: return "bad version";
        case FrameError::kUnknownKind: return "unknown kind";
        case FrameError::kUnknownOp: return "unknown op";
        case FrameError::kOversized: return "oversized";
        case FrameError::kBadLength: return "bad length";
        case FrameError::kBadPayloadChecksum: return "bad payload checksum";
        case FrameError::kTruncated: return "truncated";
        case FrameError::kCount: break;
    }
    return "unknown frame error";
}

}  // namespace spinlab
