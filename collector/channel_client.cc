// collector/channel_client.cc: see channel_client.h.
#include "channel_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

using Clock = std::chrono::steady_clock;

int ms_until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() < 0 ? 0 : int(left.count());
}

}  // namespace

ChannelClient::ChannelClient(const std::string& path, std::chrono::milliseconds timeout)
    : path_(path), timeout_(timeout), storage_(kFrameHeaderSize + kMaxPayload) {
    frame_decoder_init(&decoder_, storage_.data(), uint32_t(storage_.size()), kMaxPayload);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw CollectError(kExitUsage, "socket path too long (max " +
                                           std::to_string(sizeof addr.sun_path - 1) +
                                           " bytes): " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw CollectError(kExitFailure, std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        int e = errno;
        ::close(fd_);
        fd_ = -1;
        throw CollectError(kExitNoVm, "no VM at " + path + ": cannot connect to its control "
                                          "socket (" + std::strerror(e) + ")");
    }
}

ChannelClient::~ChannelClient() {
    if (fd_ >= 0) ::close(fd_);
}

CallResult ChannelClient::query(uint32_t info_class, uint32_t sub_class,
                                std::span<const uint8_t> input, uint32_t length) {
    return call(FrameOp::kQuery, info_class, sub_class, input, length);
}

CallResult ChannelClient::set(uint32_t info_class, uint32_t sub_class,
                              std::span<const uint8_t> buffer) {
    return call(FrameOp::kSet, info_class, sub_class, buffer, uint32_t(buffer.size()));
}

void ChannelClient::send_raw(std::span<const uint8_t> bytes) {
    send_all(bytes.data(), bytes.size(), Clock::now() + timeout_);
}

bool ChannelClient::peer_closed() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR)) return true;
    if (p.revents & POLLIN) {
        uint8_t buf[4096];
        ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) return true;
        if (n > 0) pending_.insert(pending_.end(), buf, buf + n);
    }
    return false;
}

void ChannelClient::send_all(const uint8_t* p, size_t n, Clock::time_point deadline) {
    while (n > 0) {
        pollfd pfd{fd_, POLLOUT, 0};
        int r = ::poll(&pfd, 1, ms_until(deadline));
        if (r == 0)
            throw CollectError(kExitNoVm, "the guest at " + path_ + " did not take our request "
                                              "within " + std::to_string(timeout_.count()) + " ms");
        if (r < 0 && errno == EINTR) continue;
        ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            throw CollectError(kExitNoVm, "lost the connection to the guest at " + path_ + " (" +
                                              std::strerror(errno) + ")");
        }
        p += w;
        n -= size_t(w);
    }
}

CallResult ChannelClient::call(FrameOp op, uint32_t info_class, uint32_t sub_class,
                               std::span<const uint8_t> input, uint32_t length) {
    if (length > kMaxPayload || input.size() > length)
        throw CollectError(kExitFailure, "request buffer of " + std::to_string(length) +
                                             " bytes is above the channel's limit of " +
                                             std::to_string(kMaxPayload));
    const uint32_t id = next_id_++;
    std::vector<uint8_t> frame(kFrameHeaderSize + input.size());
    FrameHeader h = frame_request(op, id, info_class, sub_class, length);
    frame_encode(h, input.data(), uint32_t(input.size()), frame.data(), uint32_t(frame.size()));
    const Clock::time_point deadline = Clock::now() + timeout_;
    send_all(frame.data(), frame.size(), deadline);

    std::vector<uint8_t> buf(64 * 1024);
    for (;;) {
        // Decode what we have before reading more: a previous read may hold our answer.
        size_t off = 0;
        for (;;) {  // kNeedMore comes only once every pending byte was consumed
            DecodeResult r =
                frame_decoder_feed(&decoder_, pending_.data() + off, pending_.size() - off);
            off += r.consumed;
            if (r.event == DecodeEvent::kNeedMore) break;
            if (r.event == DecodeEvent::kRejected || r.header.request_id != id) continue;
            if (r.header.kind == uint8_t(FrameKind::kError)) {
                pending_.erase(pending_.begin(), pending_.begin() + long(off));
                auto why = FrameError(r.header.status);
                if (why == FrameError::kBadVersion)
                    throw CollectError(kExitAbi,
                                       "ABI version mismatch: the guest at " + path_ +
                                           " does not speak channel version " +
                                           std::to_string(kChannelVersion));
                throw CollectError(kExitFailure, std::string("the guest rejected our request: ") +
                                                     frame_error_name(why));
            }
            if (r.header.kind != uint8_t(FrameKind::kResponse)) continue;
            CallResult out;
            out.status = r.header.status;
            out.return_length = r.header.length;
            out.data.assign(r.payload, r.payload + r.header.payload_length);
            pending_.erase(pending_.begin(), pending_.begin() + long(off));
            return out;
        }
        pending_.clear();

        pollfd pfd{fd_, POLLIN, 0};
        int pr = ::poll(&pfd, 1, ms_until(deadline));
        if (pr == 0) {
            frame_decoder_flush(&decoder_);
            throw CollectError(kExitNoVm, "the guest at " + path_ + " did not answer within " +
                                              std::to_string(timeout_.count()) + " ms");
        }
        if (pr < 0) {
            if (errno == EINTR) continue;
            throw CollectError(kExitFailure, std::string("poll: ") + std::strerror(errno));
        }
        ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
        if (n == 0)
            throw CollectError(kExitNoVm, "the guest at " + path_ + " closed the connection");
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            throw CollectError(kExitNoVm, "lost the connection to the guest at " + path_ + " (" +
                                              std::strerror(errno) + ")");
        }
        pending_.assign(buf.begin(), buf.begin() + n);
    }
}

}  // namespace spinlab::collect
