// experiments/soak/hostile_frames.cc: see hostile_frames.h.
#include "hostile_frames.h"

#include <cstring>

#include "channel/crc32c.h"
#include "channel/frame_codec.h"

namespace spinlab::soak {

const char* hostile_name(Hostile h) {
    switch (h) {
        case Hostile::kRandomBytes: return "random-bytes";
        case Hostile::kTruncated: return "truncated";
        case Hostile::kAbsurdLength: return "absurd-length";
        case Hostile::kAbsurdClass: return "absurd-class";
        case Hostile::kBadField: return "bad-field";
        case Hostile::kCount: break;
    }
    return "invalid";
}

uint64_t HostileFrames::random() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::vector<uint8_t> HostileFrames::random_bytes(uint32_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(random());
    return b;
}

std::vector<uint8_t> HostileFrames::encode(const FrameHeader& h, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> out(kFrameHeaderSize + payload.size());
    frame_encode(h, payload.data(), uint32_t(payload.size()), out.data(), uint32_t(out.size()));
    return out;
}

std::vector<uint8_t> HostileFrames::with_checksums(FrameHeader h) {
    h.magic = kFrameMagic;
    if (h.version == 0) h.version = kChannelVersion;  // frame_request leaves both to the encoder
    h.payload_crc = 0;
    h.header_crc = crc32c(&h, kFrameHeaderCrcSpan);
    std::vector<uint8_t> out(kFrameHeaderSize);
    std::memcpy(out.data(), &h, sizeof h);
    return out;
}

HostileFrame HostileFrames::next() { return make(Hostile(random() % uint32_t(Hostile::kCount))); }

HostileFrame HostileFrames::make(Hostile kind) {
    const uint32_t id = kHostileIdBit | next_id_++;
    HostileFrame f{kind, {}};
    switch (kind) {
        case Hostile::kRandomBytes:
            f.bytes = random_bytes(1 + uint32_t(random() % 64));
            break;
        case Hostile::kTruncated: {
            // A query of a real class with some input bytes: whole, it would be answered.
            std::vector<uint8_t> payload = random_bytes(uint32_t(random() % (kMaxTruncatedPayload + 1)));
            FrameHeader h = frame_request(FrameOp::kQuery, id,
                                          uint32_t(InfoClass::kSpinlabSystemConfiguration), 0,
                                          uint32_t(payload.size()) + 64);
            f.bytes = encode(h, payload);
            f.bytes.resize(1 + random() % (f.bytes.size() - 1));  // at least the first byte, never all
            break;
        }
        case Hostile::kAbsurdLength: {
            FrameHeader h = frame_request(FrameOp::kQuery, id,
                                          uint32_t(InfoClass::kSpinlabSpinlockPerfData), 0, 0);
            switch (random() % 4) {
                case 0:  // a query buffer far beyond what the channel carries
                    h.length = kMaxPayload + 1 + uint32_t(random() % 0x7fffffffu);
                    break;
                case 1:  // a payload beyond the guest's request limit (the bytes never follow)
                    h.payload_length = kMaxRequestPayload + 1 + uint32_t(random() % 0x7fffffffu);
                    h.length = h.payload_length;
                    break;
                case 2:  // a set whose payload and buffer lengths disagree
                    h.op = uint8_t(FrameOp::kSet);
                    h.info_class = uint32_t(InfoClass::kSpinlabResetCounters);
                    h.length = 8;
                    h.payload_length = 4000;
                    break;
                default:  // a query with more input than buffer
                    h.length = 1;
                    h.payload_length = 2 + uint32_t(random() % 1000);
                    break;
            }
            f.bytes = with_checksums(h);
            break;
        }
        case Hostile::kAbsurdClass: {
            // Classes at and above 0x5400 do not exist (spinlab/sysinfo.h): the guest must answer
            // with a status, never act. A set is safe for the same reason.
            uint32_t cls = 0x5400u + uint32_t(random() % (0xffffffffu - 0x5400u));
            FrameOp op = random() % 2 ? FrameOp::kQuery : FrameOp::kSet;
            std::vector<uint8_t> payload = random_bytes(uint32_t(random() % 33));
            uint32_t length = uint32_t(payload.size());
            if (op == FrameOp::kQuery) length += uint32_t(random() % 4096);
            FrameHeader h = frame_request(op, id, cls, uint32_t(random()), length);
            f.bytes = encode(h, payload);
            break;
        }
        case Hostile::kBadField: {
            FrameHeader h = frame_request(FrameOp::kQuery, id,
                                          uint32_t(InfoClass::kSpinlabSystemConfiguration), 0, 64);
            switch (random() % 3) {
                case 0: h.version = uint16_t(kChannelVersion + 1 + random() % 1000); break;
                case 1: h.kind = uint8_t(4 + random() % 250); break;
                default: h.op = uint8_t(3 + random() % 250); break;
            }
            f.bytes = with_checksums(h);
            break;
        }
        case Hostile::kCount:
            break;
    }
    return f;
}

}  // namespace spinlab::soak
