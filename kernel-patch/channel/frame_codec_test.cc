// Tests of the channel frame codec: round trips, resynchronisation, every rejection reason.
#include "channel/frame_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "channel/crc32c.h"

namespace spinlab {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes encode(const FrameHeader& h, const Bytes& payload) {
    Bytes out(kFrameHeaderSize + payload.size());
    uint32_t n = frame_encode(h, payload.data(), uint32_t(payload.size()), out.data(),
                              uint32_t(out.size()));
    EXPECT_EQ(n, out.size());
    return out;
}

// Rewrites header fields of an encoded frame and fixes the header checksum, to build frames
// that are well-formed on the wire but wrong in one field.
Bytes patch_header(Bytes frame, void (*patch)(FrameHeader&)) {
    FrameHeader h;
    std::memcpy(&h, frame.data(), sizeof h);
    patch(h);
    h.header_crc = crc32c(&h, kFrameHeaderCrcSpan);
    std::memcpy(frame.data(), &h, sizeof h);
    return frame;
}

struct Event {
    DecodeEvent event;
    FrameError error;
    bool header_valid;
    FrameHeader header;
    Bytes payload;
};

// Decodes a stream fed in chunks of `chunk` bytes and returns every event except kNeedMore.
class Decoder {
public:
    explicit Decoder(uint32_t max_payload = kMaxRequestPayload)
        : storage_(kFrameHeaderSize + max_payload) {
        EXPECT_TRUE(frame_decoder_init(&d_, storage_.data(), uint32_t(storage_.size()),
                                       max_payload));
    }
    std::vector<Event> feed(const Bytes& in, size_t chunk = SIZE_MAX) {
        std::vector<Event> events;
        for (size_t off = 0; off < in.size() || off == 0;) {
            size_t n = std::min(chunk, in.size() - off);
            const uint8_t* p = in.data() + off;
            size_t used = 0;
            for (;;) {
                DecodeResult r = frame_decoder_feed(&d_, p + used, n - used);
                used += r.consumed;
                if (r.event == DecodeEvent::kNeedMore) break;
                events.push_back(to_event(r));
            }
            EXPECT_EQ(used, n);
            off += n;
            if (in.empty()) break;
        }
        return events;
    }
    std::vector<Event> flush() {
        std::vector<Event> events;
        DecodeResult r = frame_decoder_flush(&d_);
        if (r.event != DecodeEvent::kNeedMore) events.push_back(to_event(r));
        return events;
    }
    const FrameDecoderStats& stats() const { return d_.stats; }

private:
    static Event to_event(const DecodeResult& r) {
        Event e{r.event, r.error, r.header_valid, r.header, {}};
        if (r.event == DecodeEvent::kFrame)
            e.payload.assign(r.payload, r.payload + r.header.payload_length);
        return e;
    }
    std::vector<uint8_t> storage_;
    FrameDecoder d_;
};

Bytes sample_set_payload() { return {5, 0, 0, 0, 1, 0, 0, 0, 0xE8, 3, 0, 0, 1, 0, 0, 0}; }

Bytes set_frame(uint32_t id) {
    Bytes p = sample_set_payload();
    return encode(frame_request(FrameOp::kSet, id, 0x1F, 5, uint32_t(p.size())), p);
}

Bytes query_frame(uint32_t id) {
    return encode(frame_request(FrameOp::kQuery, id, 0x5304, 0, 128), {});
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
    // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c_update(crc32c("1234", 4), "56789", 5), 0xE3069283u);
    EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(FrameCodec, RoundTripsARequestWithPayload) {
    Decoder dec;
    auto events = dec.feed(set_frame(42));
    ASSERT_EQ(events.size(), 1u);
    const Event& e = events[0];
    EXPECT_EQ(e.event, DecodeEvent::kFrame);
    EXPECT_EQ(e.header.kind, uint8_t(FrameKind::kRequest));
    EXPECT_EQ(e.header.op, uint8_t(FrameOp::kSet));
    EXPECT_EQ(e.header.request_id, 42u);
    EXPECT_EQ(e.header.info_class, 0x1Fu);
    EXPECT_EQ(e.header.sub_class, 5u);
    EXPECT_EQ(e.header.length, 16u);
    EXPECT_EQ(e.payload, sample_set_payload());
    EXPECT_EQ(dec.stats().frames, 1u);
}

TEST(FrameCodec, RoundTripsResponseAndErrorFrames) {
    FrameHeader req = frame_request(FrameOp::kQuery, 7, 0x5301, 3, 4096);
    Bytes data(300);
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
    Bytes stream = encode(frame_response(req, 0xC0000004u, 9000), {});
    Bytes ok = encode(frame_response(req, 0, 300), data);
    Bytes err = encode(frame_error(&req, FrameError::kBadPayloadChecksum), {});
    stream.insert(stream.end(), ok.begin(), ok.end());
    stream.insert(stream.end(), err.begin(), err.end());

    Decoder dec(kMaxPayload);
    auto events = dec.feed(stream);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].header.kind, uint8_t(FrameKind::kResponse));
    EXPECT_EQ(events[0].header.status, 0xC0000004u);
    EXPECT_EQ(events[0].header.length, 9000u);
    EXPECT_EQ(events[1].header.request_id, 7u);
    EXPECT_EQ(events[1].header.sub_class, 3u);
    EXPECT_EQ(events[1].payload, data);
    EXPECT_EQ(events[2].header.kind, uint8_t(FrameKind::kError));
    EXPECT_EQ(events[2].header.status, uint32_t(FrameError::kBadPayloadChecksum));
    EXPECT_EQ(events[2].header.request_id, 7u);
}

TEST(FrameCodec, DecodesAStreamFedOneByteAtATime) {
    Bytes stream;
    for (uint32_t id = 1; id <= 5; ++id) {
        Bytes f = id % 2 ? set_frame(id) : query_frame(id);
        stream.insert(stream.end(), f.begin(), f.end());
    }
    Decoder dec;
    auto events = dec.feed(stream, 1);
    ASSERT_EQ(events.size(), 5u);
    for (uint32_t i = 0; i < 5; ++i) {
        EXPECT_EQ(events[i].event, DecodeEvent::kFrame);
        EXPECT_EQ(events[i].header.request_id, i + 1);
    }
}

TEST(FrameCodec, SkipsLeadingGarbageAndCountsIt) {
    // What a wait=off chardev delivers: the tail of whatever the guest sent before.
    Bytes stream = {0x00, 0xFF, 'S', 'L', 'x', 'S', 'L', 'C', 0x13, 'h', 'i'};
    size_t garbage = stream.size();
    Bytes f = set_frame(9);
    stream.insert(stream.end(), f.begin(), f.end());
    Decoder dec;
    auto events = dec.feed(stream, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event, DecodeEvent::kFrame);
    EXPECT_EQ(events[0].header.request_id, 9u);
    EXPECT_EQ(dec.stats().skipped_bytes, garbage);
}

TEST(FrameCodec, RejectsAFalseMagicByHeaderChecksumAndResynchronises) {
    Bytes fake = {'S', 'L', 'C', 'F'};
    fake.resize(kFrameHeaderSize, 0xAB);  // magic, then a bogus header with a huge length
    Bytes stream = fake;
    Bytes f = query_frame(11);
    stream.insert(stream.end(), f.begin(), f.end());
    Decoder dec;
    auto events = dec.feed(stream);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].event, DecodeEvent::kRejected);
    EXPECT_EQ(events[0].error, FrameError::kBadHeaderChecksum);
    EXPECT_FALSE(events[0].header_valid);
    EXPECT_EQ(events[1].event, DecodeEvent::kFrame);
    EXPECT_EQ(events[1].header.request_id, 11u);
}

struct MalformedCase {
    const char* name;
    void (*patch)(FrameHeader&);
    FrameError expected;
};

class FrameCodecMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(FrameCodecMalformed, IsRejectedWithItsReasonAndTheNextFrameStillDecodes) {
    const MalformedCase& c = GetParam();
    Bytes stream = patch_header(set_frame(21), c.patch);
    Bytes good = query_frame(22);
    stream.insert(stream.end(), good.begin(), good.end());
    for (size_t chunk : {size_t(1), size_t(7), SIZE_MAX}) {
        Decoder dec;
        auto events = dec.feed(stream, chunk);
        ASSERT_EQ(events.size(), 2u) << c.name << " chunk " << chunk;
        EXPECT_EQ(events[0].event, DecodeEvent::kRejected) << c.name;
        EXPECT_EQ(events[0].error, c.expected) << c.name;
        EXPECT_TRUE(events[0].header_valid) << c.name;
        EXPECT_EQ(events[0].header.request_id, 21u) << c.name;
        EXPECT_EQ(events[1].event, DecodeEvent::kFrame) << c.name;
        EXPECT_EQ(events[1].header.request_id, 22u) << c.name;
        EXPECT_EQ(dec.stats().rejected[uint32_t(c.expected)], 1u) << c.name;
    }
}

INSTANTIATE_TEST_SUITE_P(
    EveryReason, FrameCodecMalformed,
    ::testing::Values(
        MalformedCase{"version", [](FrameHeader& h) { h.version = 2; }, FrameError::kBadVersion},
        MalformedCase{"kind", [](FrameHeader& h) { h.kind = 9; }, FrameError::kUnknownKind},
        MalformedCase{"op", [](FrameHeader& h) { h.op = 0; }, FrameError::kUnknownOp},
        MalformedCase{"oversized payload",
                      [](FrameHeader& h) { h.payload_length = h.length = kMaxRequestPayload + 1; },
                      FrameError::kOversized},
        MalformedCase{"oversized query length",
                      [](FrameHeader& h) {
                          h.op = uint8_t(FrameOp::kQuery);
                          h.length = kMaxPayload + 1;
                      },
                      FrameError::kOversized},
        MalformedCase{"set length mismatch", [](FrameHeader& h) { h.length = 15; },
                      FrameError::kBadLength},
        MalformedCase{"query input longer than buffer",
                      [](FrameHeader& h) {
                          h.op = uint8_t(FrameOp::kQuery);
                          h.length = 4;
                      },
                      FrameError::kBadLength},
        MalformedCase{"payload checksum", [](FrameHeader& h) { h.payload_crc ^= 1; },
                      FrameError::kBadPayloadChecksum}),
    [](const auto& info) {
        std::string s = info.param.name;
        for (char& ch : s)
            if (ch == ' ') ch = '_';
        return s;
    });

TEST(FrameCodec, RejectsACorruptedPayloadByte) {
    Bytes f = set_frame(5);
    f[kFrameHeaderSize + 3] ^= 0x40;
    Decoder dec;
    auto events = dec.feed(f);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].error, FrameError::kBadPayloadChecksum);
}

TEST(FrameCodec, ErrorFramesMustNotCarryPayload) {
    FrameHeader h = frame_error(nullptr, FrameError::kTruncated);
    h.length = 1;
    Bytes f = encode(h, {0x55});
    Decoder dec;
    auto events = dec.feed(f);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].error, FrameError::kBadLength);
}

TEST(FrameCodec, FindsAFrameThatStartsInsideATruncatedOne) {
    // The sender died mid-frame and a new session began: the old frame's declared payload
    // swallows the new frame's bytes, the payload checksum fails, and the rescan finds it.
    Bytes big(200, 0x11);
    Bytes first = encode(frame_request(FrameOp::kSet, 1, 0x1F, 5, 200), big);
    first.resize(kFrameHeaderSize + 50);
    Bytes second = query_frame(2);
    Bytes tail(200, 0x22);
    Bytes stream = first;
    stream.insert(stream.end(), second.begin(), second.end());
    stream.insert(stream.end(), tail.begin(), tail.end());
    Decoder dec;
    auto events = dec.feed(stream, 13);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(events[0].error, FrameError::kBadPayloadChecksum);
    EXPECT_EQ(events[1].event, DecodeEvent::kFrame);
    EXPECT_EQ(events[1].header.request_id, 2u);
}

TEST(FrameCodec, FlushRejectsAPartialFrameAsTruncated) {
    Bytes f = set_frame(3);
    f.resize(kFrameHeaderSize + 4);
    Decoder dec;
    EXPECT_TRUE(dec.feed(f).empty());
    auto events = dec.flush();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].error, FrameError::kTruncated);
    EXPECT_TRUE(events[0].header_valid);
    EXPECT_EQ(events[0].header.request_id, 3u);
    // The decoder starts afresh: a complete frame after the flush decodes.
    auto after = dec.feed(query_frame(4));
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].header.request_id, 4u);
}

TEST(FrameCodec, FlushOfGarbageIsNotAFrame) {
    Decoder dec;
    EXPECT_TRUE(dec.feed({'x', 'S', 'L'}).empty());
    EXPECT_TRUE(dec.flush().empty());
    EXPECT_EQ(dec.stats().skipped_bytes, 3u);
}

TEST(FrameCodec, EncodeRefusesWhatDoesNotFit) {
    uint8_t out[kFrameHeaderSize + 3];
    uint8_t payload[4] = {1, 2, 3, 4};
    FrameHeader h = frame_request(FrameOp::kSet, 1, 1, 0, 4);
    EXPECT_EQ(frame_encode(h, payload, 4, out, sizeof out), 0u);
    EXPECT_EQ(frame_encode(h, payload, 3, out, sizeof out), kFrameHeaderSize + 3);
    EXPECT_EQ(frame_encode(h, payload, kMaxPayload + 1, out, sizeof out), 0u);
}

TEST(FrameCodec, InitRefusesStorageSmallerThanAMaximalFrame) {
    FrameDecoder d;
    uint8_t small[kFrameHeaderSize + 10];
    EXPECT_FALSE(frame_decoder_init(&d, small, sizeof small, 11));
    EXPECT_TRUE(frame_decoder_init(&d, small, sizeof small, 10));
    EXPECT_FALSE(frame_decoder_init(&d, nullptr, 0, 0));
}

TEST(FrameCodec, ErrorFrameForAnUntrustedHeaderEchoesNothing) {
    FrameHeader h = frame_error(nullptr, FrameError::kBadHeaderChecksum);
    EXPECT_EQ(h.request_id, 0u);
    EXPECT_EQ(h.status, uint32_t(FrameError::kBadHeaderChecksum));
    Decoder dec;
    auto events = dec.feed(encode(h, {}));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event, DecodeEvent::kFrame);
}

TEST(FrameCodec, EveryErrorHasAName) {
    for (uint32_t e = 0; e < uint32_t(FrameError::kCount); ++e)
        EXPECT_STRNE(frame_error_name(FrameError(e)), "unknown frame error") << e;
}

}  // namespace
}  // namespace spinlab
