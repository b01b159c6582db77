#include "qmp_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace pt = boost::property_tree;

namespace {
pt::ptree parse_json(const std::string& text) {
    pt::ptree tree;
    std::istringstream in(text);
    try {
        pt::read_json(in, tree);
    } catch (const pt::json_parser_error& e) {
        throw LoadError("QMP sent malformed JSON (" + e.message() + "): " + text);
    }
    return tree;
}
}  // namespace

bool is_qmp_event(const std::string& line) {
    return parse_json(line).count("event") > 0;
}

std::vector<QmpCpu> parse_query_cpus_fast(const std::string& reply) {
    pt::ptree tree = parse_json(reply);
    if (auto err = tree.get_child_optional("error")) {
        throw LoadError("QMP query-cpus-fast failed: " + err->get<std::string>("desc", "(no desc)"));
    }
    auto ret = tree.get_child_optional("return");
    if (!ret) throw LoadError("QMP reply has no \"return\": " + reply);
    std::vector<QmpCpu> cpus;
    for (const auto& [key, cpu] : *ret) {
        auto index = cpu.get_optional<int>("cpu-index");
        auto thread = cpu.get_optional<int>("thread-id");
        if (!index || !thread || *thread <= 0) {
            throw LoadError("QMP query-cpus-fast entry without cpu-index or thread-id: " + reply);
        }
        cpus.push_back({*index, *thread, cpu.get<std::string>("qom-path", "")});
    }
    if (cpus.empty()) throw LoadError("QMP query-cpus-fast returned no vCPUs");
    return cpus;
}

QmpClient::QmpClient(const std::string& socket_path, int timeout_ms)
    : path_(socket_path), timeout_ms_(timeout_ms) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path) {
        throw LoadError("--qmp socket path is too long: " + socket_path);
    }
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw LoadError(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        int err = errno;
        ::close(fd_);
        fd_ = -1;
        throw LoadError("cannot connect to QMP socket " + socket_path + ": " + std::strerror(err));
    }
    // QMP greets first, but QEMU can put an event ahead of the greeting (seen once from
    // spinlab-vm's client: a RESUME emitted at start-up); skip events as execute() does.
    std::string greeting = read_line();
    for (int i = 0; i < 64 && is_qmp_event(greeting); ++i) greeting = read_line();
    if (parse_json(greeting).count("QMP") == 0) {
        throw LoadError("QMP socket " + socket_path + " did not greet with {\"QMP\": ...}: " + greeting);
    }
    std::string reply = execute("qmp_capabilities");
    if (parse_json(reply).count("return") == 0) {
        throw LoadError("QMP qmp_capabilities failed: " + reply);
    }
}

QmpClient::~QmpClient() {
    if (fd_ >= 0) ::close(fd_);
}

std::string QmpClient::read_line() {
    for (;;) {
        size_t nl = buffer_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            if (!trim(line).empty()) return line;
            continue;
        }
        pollfd pfd{fd_, POLLIN, 0};
        int n = ::poll(&pfd, 1, timeout_ms_);
        if (n == 0) throw LoadError("QMP socket " + path_ + ": no reply within " +
                                    std::to_string(timeout_ms_) + " ms");
        if (n < 0) {
            if (errno == EINTR) continue;
            throw LoadError(std::string("poll on QMP socket: ") + std::strerror(errno));
        }
        char buf[4096];
        ssize_t got = ::read(fd_, buf, sizeof buf);
        if (got == 0) throw LoadError("QMP socket " + path_ + " closed by QEMU");
        if (got < 0) {
            if (errno == EINTR) continue;
            throw LoadError("reading QMP socket " + path_ + ": " + std::strerror(errno));
        }
        buffer_.append(buf, static_cast<size_t>(got));
    }
}

std::string QmpClient::execute(const std::string& command) {
    std::string request = "{\"execute\": \"" + command + "\"}\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        throw LoadError("writing to QMP socket " + path_ + ": " + std::strerror(errno));
    }
    for (;;) {
        std::string line = read_line();
        if (!is_qmp_event(line)) return line;
    }
}

std::vector<QmpCpu> query_vcpus_over_qmp(const std::string& socket_path) {
    QmpClient client(socket_path);
    return parse_query_cpus_fast(client.execute("query-cpus-fast"));
}

}  // namespace spinlab::load
