// experiments/soak/hostile_frames_test.cc: the hostile frames against the channel's own decoder,
// configured as the guest's server is (requests up to kMaxRequestPayload).
#include "hostile_frames.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "channel/frame_codec.h"

namespace spinlab::soak {
namespace {

constexpr uint32_t kQueryId = 7;

std::vector<uint8_t> valid_query() {
    FrameHeader h = frame_request(FrameOp::kQuery, kQueryId, uint32_t(InfoClass::kSpinlabSystemConfiguration), 0,
                                  64);
    std::vector<uint8_t> out(kFrameHeaderSize);
    frame_encode(h, nullptr, 0, out.data(), uint32_t(out.size()));
    return out;
}

struct Decoded {
    std::vector<FrameHeader> frames;
    std::vector<FrameError> rejected;
};

// Feeds `bytes` to a decoder as the guest's server has it and collects what comes out.
Decoded decode(const std::vector<uint8_t>& bytes) {
    std::vector<uint8_t> storage(kFrameHeaderSize + kMaxRequestPayload);
    FrameDecoder d;
    EXPECT_TRUE(frame_decoder_init(&d, storage.data(), uint32_t(storage.size()), kMaxRequestPayload));
    Decoded out;
    size_t off = 0;
    for (;;) {
        DecodeResult r = frame_decoder_feed(&d, bytes.data() + off, bytes.size() - off);
        off += r.consumed;
        if (r.event == DecodeEvent::kFrame) out.frames.push_back(r.header);
        if (r.event == DecodeEvent::kRejected) out.rejected.push_back(r.error);
        if (r.event == DecodeEvent::kNeedMore && off == bytes.size()) break;
    }
    return out;
}

TEST(HostileFrames, SameSeedSameFramesAndEveryKindComes) {
    HostileFrames a(42), b(42), c(43);
    std::set<Hostile> kinds;
    bool differs = false;
    for (int i = 0; i < 500; ++i) {
        HostileFrame fa = a.next(), fb = b.next(), fc = c.next();
        EXPECT_EQ(fa.kind, fb.kind);
        EXPECT_EQ(fa.bytes, fb.bytes);
        differs = differs || fa.bytes != fc.bytes;
        EXPECT_FALSE(fa.bytes.empty()) << hostile_name(fa.kind);
        kinds.insert(fa.kind);
    }
    EXPECT_TRUE(differs);
    EXPECT_EQ(kinds.size(), size_t(Hostile::kCount));
}

// After any burst and the flush bytes, a valid query is delivered intact, and nothing of the
// burst is delivered but the absurd-class requests (which carry the hostile id bit).
TEST(HostileFrames, AValidQueryAfterABurstAndTheFlushIsDelivered) {
    HostileFrames h(7);
    for (int burst = 0; burst < 300; ++burst) {
        std::vector<uint8_t> bytes;
        size_t absurd_classes = 0;
        for (int i = 0; i < 1 + burst % 6; ++i) {
            HostileFrame f = h.next();
            absurd_classes += f.kind == Hostile::kAbsurdClass;
            bytes.insert(bytes.end(), f.bytes.begin(), f.bytes.end());
        }
        bytes.resize(bytes.size() + kFlushBytes, 0);
        std::vector<uint8_t> q = valid_query();
        bytes.insert(bytes.end(), q.begin(), q.end());
        Decoded d = decode(bytes);
        ASSERT_FALSE(d.frames.empty()) << "burst " << burst;
        EXPECT_EQ(d.frames.back().request_id, kQueryId) << "burst " << burst;
        EXPECT_LE(d.frames.size() - 1, absurd_classes) << "burst " << burst;
        for (size_t i = 0; i + 1 < d.frames.size(); ++i) {
            EXPECT_TRUE(d.frames[i].request_id & kHostileIdBit);
            EXPECT_GE(d.frames[i].info_class, 0x5400u);  // no class the guest knows
        }
    }
}

// Why the flush is there: a truncated frame with a whole header swallows what follows.
TEST(HostileFrames, WithoutTheFlushATruncatedFrameSwallowsTheQuery) {
    HostileFrames h(3);
    int swallowed = 0;
    for (int i = 0; i < 200; ++i) {
        HostileFrame f = h.make(Hostile::kTruncated);
        std::vector<uint8_t> q = valid_query();
        if (f.bytes.size() < kFrameHeaderSize) continue;  // the header itself is cut: resync
        FrameHeader hd;
        std::memcpy(&hd, f.bytes.data(), sizeof hd);
        // A frame the query's bytes complete is rejected, and the hunt finds the query inside.
        if (kFrameHeaderSize + hd.payload_length - f.bytes.size() <= q.size()) continue;
        f.bytes.insert(f.bytes.end(), q.begin(), q.end());
        Decoded d = decode(f.bytes);
        swallowed += d.frames.empty();
    }
    EXPECT_GT(swallowed, 0);
}

TEST(HostileFrames, CrcValidKindsPassTheHeaderChecksumAndAreRejectedForTheirDefect) {
    HostileFrames h(11);
    std::set<FrameError> seen;
    for (Hostile k : {Hostile::kAbsurdLength, Hostile::kBadField}) {
        for (int i = 0; i < 100; ++i) {
            HostileFrame f = h.make(k);
            ASSERT_EQ(f.bytes.size(), kFrameHeaderSize);
            FrameHeader hd;
            std::memcpy(&hd, f.bytes.data(), sizeof hd);
            FrameError e = frame_check_header(hd, kMaxRequestPayload);
            EXPECT_NE(e, FrameError::kBadHeaderChecksum) << hostile_name(k);
            EXPECT_NE(e, FrameError::kNone) << hostile_name(k);
            EXPECT_TRUE(hd.request_id & kHostileIdBit);
            seen.insert(e);
        }
    }
    for (FrameError e : {FrameError::kBadVersion, FrameError::kUnknownKind, FrameError::kUnknownOp,
                         FrameError::kOversized, FrameError::kBadLength})
        EXPECT_TRUE(seen.count(e)) << frame_error_name(e);
}

TEST(HostileFrames, TruncatedFramesAreProperPrefixesOfAValidFrame) {
    HostileFrames h(5);
    for (int i = 0; i < 200; ++i) {
        HostileFrame f = h.make(Hostile::kTruncated);
        ASSERT_GE(f.bytes.size(), 1u);
        uint32_t magic = 0;
        std::memcpy(&magic, f.bytes.data(), std::min<size_t>(4, f.bytes.size()));
        if (f.bytes.size() >= 4) {
            EXPECT_EQ(magic, kFrameMagic);
        }
        EXPECT_TRUE(decode(f.bytes).frames.empty());
    }
}

}  // namespace
}  // namespace spinlab::soak
