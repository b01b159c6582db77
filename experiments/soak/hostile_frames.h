// experiments/soak/hostile_frames.h: the channel input the soak throws at the guest between its
// valid queries. Every frame is built with the channel's own codec (kernel-patch/channel/), so
// "CRC-valid" means valid to the guest's decoder, and what makes a frame hostile is one
// deliberate defect per kind.
#pragma once
#include <spinlab/channel.h>
#include <spinlab/sysinfo.h>

#include <cstdint>
#include <vector>

namespace spinlab::soak {

enum class Hostile : uint8_t {
    kRandomBytes,   // 1..64 random bytes (line noise)
    kTruncated,     // a valid request cut short; the rest never comes
    kAbsurdLength,  // CRC-valid header whose lengths are above the limits or disagree
    kAbsurdClass,   // a complete, valid request for an information class that does not exist
    kBadField,      // CRC-valid header with an unknown version, kind or op
    kCount,
};
const char* hostile_name(Hostile h);

struct HostileFrame {
    Hostile kind;
    std::vector<uint8_t> bytes;
};

// Request ids of hostile frames have the top bit set: the collector's client numbers its own
// requests from 1, so an answer to a hostile frame is never taken for the answer to a query.
inline constexpr uint32_t kHostileIdBit = 0x80000000u;

// Small frames: every byte costs the guest an emulated serial read, and on a loaded host a burst
// of kilobytes delayed the next valid query by seconds; what makes a frame hostile is its defect,
// not its size. The largest payload a truncated frame claims. Every other hostile frame is either complete or
// rejected on its header alone (frame_check_header), before any payload is awaited.
inline constexpr uint32_t kMaxTruncatedPayload = 64;

// What follows a burst of hostile frames, before the next valid query: zeros enough to complete
// any frame a truncated one left the decoder waiting for. Without it the guest's decoder would
// take the query's bytes as the rest of the truncated frame and drop them with it when the line
// goes idle (hostile_frames_test shows both).
inline constexpr uint32_t kFlushBytes = kFrameHeaderSize + kMaxTruncatedPayload;

// A seeded, reproducible source of hostile frames (SplitMix64: the same seed gives the same
// frames on every machine).
class HostileFrames {
public:
    explicit HostileFrames(uint64_t seed) : state_(seed) {}
    HostileFrame next();                  // a kind chosen at random
    HostileFrame make(Hostile kind);      // one frame of that kind
    uint64_t random();

private:
    std::vector<uint8_t> encode(const FrameHeader& h, const std::vector<uint8_t>& payload);
    std::vector<uint8_t> with_checksums(FrameHeader h);  // header alone, CRCs made valid
    std::vector<uint8_t> random_bytes(uint32_t n);

    uint64_t state_;
    uint32_t next_id_ = 1;
};

}  // namespace spinlab::soak
