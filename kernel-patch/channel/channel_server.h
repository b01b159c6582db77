// channel/channel_server.h: the guest end of the control channel, transport- and
// handler-free, so the kernel's COM2 driver and the host's fake guest run the same code.
//
//   bytes in (receive interrupt / socket)  ->  channel_server_receive()
//       -> FrameDecoder -> request frame -> handler(op, class, buffer, length) -> response
//       -> rejected frame with a trusted header -> error frame (FrameError in status)
//       -> rejected bytes without one -> counted in ChannelServerStats, nothing sent
//   line idle past the transport's timeout  ->  channel_server_idle()  (truncated frames)
//
// The handler writes its answer straight into the response frame's payload area, so a
// 1 MiB perf-data answer is copied once (into the frame) and then sent.
#pragma once
#include <spinlab/channel.h>
#include <spinlab/shm.h>
#include <stddef.h>
#include <stdint.h>

#include "frame_codec.h"

namespace spinlab {

// Runs one system-information call. `buffer` holds `length` bytes: the request's input
// followed by zeros. Returns the sysinfo status and sets *return_length.
using ChannelHandler = uint32_t (*)(void* arg, FrameOp op, uint32_t info_class, uint32_t sub_class,
                                    uint8_t* buffer, uint32_t length, uint32_t* return_length);
// Sends bytes to the host; the server calls it once per frame.
using ChannelSend = void (*)(void* arg, const uint8_t* bytes, uint32_t n);

struct ChannelServer {
    FrameDecoder decoder;
    uint8_t* out;           // response frame storage: kFrameHeaderSize + out_max_payload
    uint32_t out_max_payload;
    ChannelHandler handler;
    void* handler_arg;
    ChannelSend send;
    void* send_arg;
    ChannelServerStats* stats;  // in the shared region, or a private copy; never null
};

// decoder_storage: kFrameHeaderSize + kMaxRequestPayload bytes. out_storage: kFrameHeaderSize +
// out_max_payload bytes (kMaxPayload to answer every query the host may send; a query asking
// for more gets an error frame kOversized). Returns false when a storage is too small.
bool channel_server_init(ChannelServer* s, uint8_t* decoder_storage, uint32_t decoder_capacity,
                         uint8_t* out_storage, uint32_t out_capacity, ChannelHandler handler,
                         void* handler_arg, ChannelSend send, void* send_arg,
                         ChannelServerStats* stats);

// Feeds received bytes; answers every complete request among them.
void channel_server_receive(ChannelServer* s, const uint8_t* data, size_t len);

// The line has been idle: a partial frame is dropped (counted as truncated).
void channel_server_idle(ChannelServer* s);

}  // namespace spinlab
