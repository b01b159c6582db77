// libFuzzer target: the frame decoder and the channel server on arbitrary byte streams.
// What must hold: no crash or out-of-bounds access (ASan), every call consumes what it says,
// every delivered frame is valid and re-encodes to the same bytes, and everything the server
// sends back decodes as a valid frame.
#include <stddef.h>
#include <stdint.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "channel/channel_server.h"
#include "channel/crc32c.h"
#include "channel/frame_codec.h"

namespace {

using namespace spinlab;

void check(bool ok) {
    if (!ok) std::abort();
}

uint32_t echo_handler(void*, FrameOp op, uint32_t info_class, uint32_t, uint8_t* buf,
                      uint32_t length, uint32_t* return_length) {
    if (op == FrameOp::kQuery && info_class == 1) {
        for (uint32_t i = 0; i < length; ++i) buf[i] ^= 0x5A;
        *return_length = length;
        return 0;
    }
    *return_length = 0;
    return 0xC0000003;
}

struct Wire {
    std::vector<uint8_t> bytes;
};

void to_wire(void* arg, const uint8_t* p, uint32_t n) {
    auto* w = static_cast<Wire*>(arg);
    w->bytes.insert(w->bytes.end(), p, p + n);
}

// Makes every header-shaped run after a magic carry correct checksums, so mutations reach the
// checks behind the header CRC (version, kind, op, lengths, payload) instead of dying there.
void fix_checksums(std::vector<uint8_t>& b) {
    for (size_t i = 0; i + kFrameHeaderSize <= b.size(); ++i) {
        FrameHeader h;
        std::memcpy(&h, b.data() + i, sizeof h);
        if (h.magic != kFrameMagic) continue;
        size_t room = b.size() - i - kFrameHeaderSize;
        if (h.payload_length <= room) h.payload_crc = crc32c(b.data() + i + kFrameHeaderSize, h.payload_length);
        h.header_crc = crc32c(&h, kFrameHeaderCrcSpan);
        std::memcpy(b.data() + i, &h, sizeof h);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t size) {
    // The first byte picks the chunk size (split points matter to an incremental decoder) and
    // whether checksums are fixed up.
    size_t chunk = size > 0 ? size_t(raw[0] % 64) + 1 : 1;
    std::vector<uint8_t> copy(raw, raw + size);
    if (size > 0 && (raw[0] & 0x80)) fix_checksums(copy);
    const uint8_t* data = copy.data();

    static std::vector<uint8_t> storage(kFrameHeaderSize + kMaxRequestPayload);
    FrameDecoder d;
    check(frame_decoder_init(&d, storage.data(), uint32_t(storage.size()), kMaxRequestPayload));
    size_t frames = 0;
    for (size_t off = 0; off < size;) {
        size_t n = size - off < chunk ? size - off : chunk;
        size_t used = 0;
        for (;;) {
            DecodeResult r = frame_decoder_feed(&d, data + off + used, n - used);
            check(r.consumed <= n - used);
            used += r.consumed;
            if (r.event == DecodeEvent::kNeedMore) break;
            if (r.event == DecodeEvent::kFrame) {
                ++frames;
                check(frame_check_header(r.header, kMaxRequestPayload) == FrameError::kNone);
                check(crc32c(r.payload, r.header.payload_length) == r.header.payload_crc);
                std::vector<uint8_t> again(kFrameHeaderSize + r.header.payload_length);
                check(frame_encode(r.header, r.payload, r.header.payload_length, again.data(),
                                   uint32_t(again.size())) == again.size());
                FrameHeader h2;
                std::memcpy(&h2, again.data(), sizeof h2);
                check(std::memcmp(&h2, &r.header, sizeof h2) == 0);
            }
        }
        check(used == n);
        off += n;
    }
    frame_decoder_flush(&d);
    check(d.stats.frames == frames);

    // The same bytes through the server: whatever it sends must decode cleanly.
    static std::vector<uint8_t> dec(kFrameHeaderSize + kMaxRequestPayload);
    static std::vector<uint8_t> out(kFrameHeaderSize + 8192);
    Wire wire;
    ChannelServerStats stats{};
    ChannelServer s;
    check(channel_server_init(&s, dec.data(), uint32_t(dec.size()), out.data(),
                              uint32_t(out.size()), echo_handler, nullptr, to_wire, &wire, &stats));
    channel_server_receive(&s, data, size);
    channel_server_idle(&s);
    static std::vector<uint8_t> cstore(kFrameHeaderSize + kMaxPayload);
    FrameDecoder c;
    check(frame_decoder_init(&c, cstore.data(), uint32_t(cstore.size()), kMaxPayload));
    for (size_t off = 0;;) {
        DecodeResult r = frame_decoder_feed(&c, wire.bytes.data() + off, wire.bytes.size() - off);
        off += r.consumed;
        if (r.event == DecodeEvent::kNeedMore) break;
        check(r.event == DecodeEvent::kFrame);
        check(r.header.kind != uint8_t(FrameKind::kRequest));
    }
    check(c.stats.skipped_bytes == 0);
    return 0;
}
