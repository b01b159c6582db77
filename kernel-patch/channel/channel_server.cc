// channel/channel_server.cc: see channel_server.h.
#include "channel_server.h"

namespace spinlab {
namespace {

void count(uint64_t* c) { __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED); }

void sync_decoder_stats(ChannelServer* s) {
    // The decoder counts privately; the shared copy is what the host reads (skew accepted).
    __atomic_store_n(&s->stats->skipped_bytes, s->decoder.stats.skipped_bytes, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < uint32_t(FrameError::kCount); ++i)
        __atomic_store_n(&s->stats->rejected[i], s->decoder.stats.rejected[i], __ATOMIC_RELAXED);
}

void send_error(ChannelServer* s, const FrameHeader* request, FrameError e) {
    count(&s->stats->errors_sent);
    sync_decoder_stats(s);  // a host that sees this answer sees counts that include it
    FrameHeader h = frame_error(request, e);
    uint32_t n = frame_encode(h, nullptr, 0, s->out, kFrameHeaderSize);
    s->send(s->send_arg, s->out, n);
}

void answer(ChannelServer* s, const FrameHeader& req, const uint8_t* payload) {
    if (req.kind != uint8_t(FrameKind::kRequest)) return;  // not ours to answer: ignore
    if (req.length > s->out_max_payload) {
        send_error(s, &req, FrameError::kOversized);
        return;
    }
    // The handler's buffer is the response's payload area: input first, then zeros.
    uint8_t* buf = s->out + kFrameHeaderSize;
    if (req.payload_length > 0) __builtin_memcpy(buf, payload, req.payload_length);
    __builtin_memset(buf + req.payload_length, 0, req.length - req.payload_length);
    uint32_t return_length = 0;
    uint32_t status = s->handler(s->handler_arg, FrameOp(req.op), req.info_class, req.sub_class,
                                 buf, req.length, &return_length);
    count(&s->stats->requests);
    sync_decoder_stats(s);  // a host that sees this answer sees counts that include it
    // Data goes back only on success, and never more than the caller's buffer held.
    uint32_t n = 0;
    if (status == 0 && req.op == uint8_t(FrameOp::kQuery))
        n = return_length < req.length ? return_length : req.length;
    uint32_t size = frame_encode_in_place(frame_response(req, status, return_length), n, s->out,
                                          kFrameHeaderSize + s->out_max_payload);
    s->send(s->send_arg, s->out, size);
}

}  // namespace

bool channel_server_init(ChannelServer* s, uint8_t* decoder_storage, uint32_t decoder_capacity,
                         uint8_t* out_storage, uint32_t out_capacity, ChannelHandler handler,
                         void* handler_arg, ChannelSend send, void* send_arg,
                         ChannelServerStats* stats) {
    *s = ChannelServer{};
    if (out_storage == nullptr || out_capacity < kFrameHeaderSize || handler == nullptr ||
        send == nullptr || stats == nullptr)
        return false;
    if (!frame_decoder_init(&s->decoder, decoder_storage, decoder_capacity, kMaxRequestPayload))
        return false;
    s->out = out_storage;
    s->out_max_payload = out_capacity - kFrameHeaderSize;
    if (s->out_max_payload > kMaxPayload) s->out_max_payload = kMaxPayload;
    s->handler = handler;
    s->handler_arg = handler_arg;
    s->send = send;
    s->send_arg = send_arg;
    s->stats = stats;
    return true;
}

void channel_server_receive(ChannelServer* s, const uint8_t* data, size_t len) {
    size_t off = 0;
    for (;;) {
        DecodeResult r = frame_decoder_feed(&s->decoder, data + off, len - off);
        off += r.consumed;
        if (r.event == DecodeEvent::kNeedMore) break;
        if (r.event == DecodeEvent::kFrame) {
            answer(s, r.header, r.payload);
        } else if (r.header_valid && r.header.kind == uint8_t(FrameKind::kRequest)) {
            // We know who asked: tell them why. Error and response frames are never answered,
            // so two servers cannot ping-pong errors at each other.
            send_error(s, &r.header, r.error);
        }
    }
    sync_decoder_stats(s);
}

void channel_server_idle(ChannelServer* s) {
    DecodeResult r = frame_decoder_flush(&s->decoder);
    if (r.event == DecodeEvent::kRejected && r.header_valid &&
        r.header.kind == uint8_t(FrameKind::kRequest))
        send_error(s, &r.header, r.error);
    sync_decoder_stats(s);
}

}  // namespace spinlab
