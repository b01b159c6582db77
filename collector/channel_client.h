// collector/channel_client.h: the host end of the control channel (spinlab/channel.h).
//
// Connects to the QEMU chardev UNIX socket of the guest's channel port and makes the
// system-information calls over it, one at a time: send a request frame, then read until the
// response (or error frame) with the same request id arrives, skipping whatever else the
// stream holds (garbage from before we connected, answers to requests that timed out).
#pragma once
#include <spinlab/channel.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "channel/frame_codec.h"

namespace spinlab::collect {

struct CallResult {
    uint32_t status = 0;         // sysinfo status (spinlab/status.h)
    uint32_t return_length = 0;  // the handler's return length
    std::vector<uint8_t> data;   // output bytes (empty unless status is success)
};

// The bytes of a plain struct, as query() and set() take their input.
template <class T>
std::span<const uint8_t> bytes_of(const T& v) {
    return {reinterpret_cast<const uint8_t*>(&v), sizeof v};
}

class ChannelClient {
public:
    // Throws CollectError(kExitNoVm) when nothing listens at `path`.
    ChannelClient(const std::string& path, std::chrono::milliseconds timeout);
    ~ChannelClient();
    ChannelClient(const ChannelClient&) = delete;
    ChannelClient& operator=(const ChannelClient&) = delete;

    // query_system_information(info_class + sub_class, buffer(input, length)).
    // Throws CollectError: kExitNoVm on timeout or a closed connection, kExitAbi when the guest
    // rejects our frame version, kExitFailure when it rejects the frame for another reason.
    CallResult query(uint32_t info_class, uint32_t sub_class, std::span<const uint8_t> input,
                     uint32_t length);
    // set_system_information(info_class + sub_class, buffer, buffer.size()).
    CallResult set(uint32_t info_class, uint32_t sub_class, std::span<const uint8_t> buffer);

    // Writes raw bytes (tests: garbage on the line).
    void send_raw(std::span<const uint8_t> bytes);

    // Whether the peer closed the connection (checked without blocking).
    bool peer_closed();

    const FrameDecoderStats& stats() const { return decoder_.stats; }
    const std::string& path() const { return path_; }

private:
    CallResult call(FrameOp op, uint32_t info_class, uint32_t sub_class,
                    std::span<const uint8_t> input, uint32_t length);
    void send_all(const uint8_t* p, size_t n, std::chrono::steady_clock::time_point deadline);

    std::string path_;
    std::chrono::milliseconds timeout_;
    int fd_ = -1;
    uint32_t next_id_ = 1;
    std::vector<uint8_t> storage_;
    FrameDecoder decoder_{};
    std::vector<uint8_t> pending_;  // received bytes not yet fed to the decoder
};

}  // namespace spinlab::collect
