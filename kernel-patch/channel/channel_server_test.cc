// The channel server: requests reach the handler with the caller's buffer, answers and
// errors go back as frames, garbage is counted and the server keeps serving.
#include "channel/channel_server.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace spinlab {
namespace {

using Bytes = std::vector<uint8_t>;

struct Harness {
    Harness() : dec(kFrameHeaderSize + kMaxRequestPayload), out(kFrameHeaderSize + 4096) {
        EXPECT_TRUE(channel_server_init(&server, dec.data(), uint32_t(dec.size()), out.data(),
                                        uint32_t(out.size()), &Harness::handle, this,
                                        &Harness::send, this, &stats));
        client_storage.resize(kFrameHeaderSize + kMaxPayload);
        frame_decoder_init(&client, client_storage.data(), uint32_t(client_storage.size()),
                           kMaxPayload);
    }

    // A handler that answers a query of class 1 with `length` bytes counting up from the
    // first input byte, and refuses everything else with an invalid-class status.
    static uint32_t handle(void* arg, FrameOp op, uint32_t info_class, uint32_t, uint8_t* buf,
                           uint32_t length, uint32_t* return_length) {
        auto* h = static_cast<Harness*>(arg);
        h->calls++;
        h->last_length = length;
        if (op == FrameOp::kQuery && info_class == 1) {
            if (length < 8) {
                *return_length = 8;
                return 0xC0000004;
            }
            for (uint32_t i = 1; i < length; ++i) buf[i] = uint8_t(buf[0] + i);
            *return_length = length;
            return 0;
        }
        if (op == FrameOp::kSet && info_class == 2) {
            h->set_value.assign(buf, buf + length);
            *return_length = 0;
            return 0;
        }
        *return_length = 0;
        return 0xC0000003;
    }
    static void send(void* arg, const uint8_t* p, uint32_t n) {
        auto* h = static_cast<Harness*>(arg);
        h->wire.insert(h->wire.end(), p, p + n);
    }

    void receive(const Bytes& b) { channel_server_receive(&server, b.data(), b.size()); }

    // Frames the server sent so far, decoded as the host would.
    struct Reply {
        FrameHeader h;
        Bytes payload;
    };
    std::vector<Reply> replies() {
        std::vector<Reply> out_frames;
        size_t off = 0;
        for (;;) {
            DecodeResult r = frame_decoder_feed(&client, wire.data() + off, wire.size() - off);
            off += r.consumed;
            if (r.event == DecodeEvent::kNeedMore) break;
            EXPECT_EQ(r.event, DecodeEvent::kFrame) << "the server sent a malformed frame";
            if (r.event == DecodeEvent::kFrame)
                out_frames.push_back({r.header, Bytes(r.payload, r.payload + r.header.payload_length)});
        }
        wire.clear();
        return out_frames;
    }

    Bytes dec, out, client_storage;
    ChannelServer server;
    ChannelServerStats stats{};
    FrameDecoder client;
    Bytes wire;
    int calls = 0;
    uint32_t last_length = 0;
    Bytes set_value;
};

Bytes frame(const FrameHeader& h, const Bytes& payload) {
    Bytes b(kFrameHeaderSize + payload.size());
    frame_encode(h, payload.data(), uint32_t(payload.size()), b.data(), uint32_t(b.size()));
    return b;
}

TEST(ChannelServer, AnswersAQueryWithTheHandlersBytes) {
    Harness t;
    t.receive(frame(frame_request(FrameOp::kQuery, 5, 1, 0, 16), {100}));
    auto r = t.replies();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.kind, uint8_t(FrameKind::kResponse));
    EXPECT_EQ(r[0].h.request_id, 5u);
    EXPECT_EQ(r[0].h.status, 0u);
    EXPECT_EQ(r[0].h.length, 16u);
    ASSERT_EQ(r[0].payload.size(), 16u);
    EXPECT_EQ(r[0].payload[0], 100);
    EXPECT_EQ(r[0].payload[15], 115);
    EXPECT_EQ(t.stats.requests, 1u);
}

TEST(ChannelServer, ALengthMismatchReturnsTheNeededLengthAndNoData) {
    Harness t;
    t.receive(frame(frame_request(FrameOp::kQuery, 6, 1, 0, 4), {}));
    auto r = t.replies();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.status, 0xC0000004u);
    EXPECT_EQ(r[0].h.length, 8u);
    EXPECT_TRUE(r[0].payload.empty());
}

TEST(ChannelServer, SetPassesTheBufferAndAnswersWithoutData) {
    Harness t;
    t.receive(frame(frame_request(FrameOp::kSet, 7, 2, 0, 3), {1, 2, 3}));
    auto r = t.replies();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.status, 0u);
    EXPECT_TRUE(r[0].payload.empty());
    EXPECT_EQ(t.set_value, (Bytes{1, 2, 3}));
}

TEST(ChannelServer, AnswersAMalformedRequestWithAnErrorFrameAndKeepsServing) {
    Harness t;
    Bytes bad = frame(frame_request(FrameOp::kSet, 8, 2, 0, 3), {1, 2, 3});
    bad[kFrameHeaderSize] ^= 0xFF;  // payload checksum now fails
    Bytes garbage = {0xde, 0xad, 'S', 'L', 0xbe, 0xef};
    Bytes good = frame(frame_request(FrameOp::kQuery, 9, 1, 0, 8), {0});
    Bytes stream = garbage;
    stream.insert(stream.end(), bad.begin(), bad.end());
    stream.insert(stream.end(), good.begin(), good.end());
    t.receive(stream);
    auto r = t.replies();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].h.kind, uint8_t(FrameKind::kError));
    EXPECT_EQ(r[0].h.request_id, 8u);
    EXPECT_EQ(r[0].h.status, uint32_t(FrameError::kBadPayloadChecksum));
    EXPECT_EQ(r[1].h.kind, uint8_t(FrameKind::kResponse));
    EXPECT_EQ(r[1].h.request_id, 9u);
    EXPECT_EQ(t.calls, 1);  // the bad request never reached the handler
    EXPECT_EQ(t.stats.errors_sent, 1u);
    EXPECT_EQ(t.stats.rejected[uint32_t(FrameError::kBadPayloadChecksum)], 1u);
    EXPECT_GE(t.stats.skipped_bytes, garbage.size());
}

TEST(ChannelServer, RefusesAQueryLargerThanItsAnswerBuffer) {
    Harness t;
    t.receive(frame(frame_request(FrameOp::kQuery, 10, 1, 0, 4097), {}));
    auto r = t.replies();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.kind, uint8_t(FrameKind::kError));
    EXPECT_EQ(r[0].h.status, uint32_t(FrameError::kOversized));
    EXPECT_EQ(t.calls, 0);
}

TEST(ChannelServer, DropsWhatItCannotParseAndCountsIt) {
    Harness t;
    Bytes noise(500);
    for (size_t i = 0; i < noise.size(); ++i) noise[i] = uint8_t(i * 37 + 11);
    t.receive(noise);
    EXPECT_TRUE(t.replies().empty());
    Bytes partial = frame(frame_request(FrameOp::kSet, 11, 2, 0, 3), {1, 2, 3});
    partial.resize(kFrameHeaderSize + 1);
    t.receive(partial);
    channel_server_idle(&t.server);
    auto r = t.replies();
    ASSERT_EQ(r.size(), 1u);  // the header was trusted: the sender learns it was truncated
    EXPECT_EQ(r[0].h.status, uint32_t(FrameError::kTruncated));
    EXPECT_EQ(t.stats.rejected[uint32_t(FrameError::kTruncated)], 1u);
    EXPECT_GT(t.stats.skipped_bytes, 400u);
}

TEST(ChannelServer, NeverAnswersResponsesOrErrors) {
    Harness t;
    FrameHeader req = frame_request(FrameOp::kQuery, 12, 1, 0, 8);
    t.receive(frame(frame_response(req, 0, 0), {}));
    t.receive(frame(frame_error(&req, FrameError::kBadVersion), {}));
    EXPECT_TRUE(t.replies().empty());
    EXPECT_EQ(t.calls, 0);
}

}  // namespace
}  // namespace spinlab
