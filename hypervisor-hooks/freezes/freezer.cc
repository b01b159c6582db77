#include "freezer.h"

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"

namespace spinlab::load {

CgroupFreezer::CgroupFreezer(std::string dir, CgroupVersion version)
    : dir_(std::move(dir)), version_(version) {
    std::string file = dir_ + (version_ == CgroupVersion::kV1 ? "/freezer.state" : "/cgroup.freeze");
    control_fd_ = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (control_fd_ < 0) {
        throw LoadError("cannot open " + file + ": " + std::strerror(errno) +
                        (version_ == CgroupVersion::kV2 ? " (cgroup.freeze needs Linux 5.2+)" : ""));
    }
    if (version_ == CgroupVersion::kV2) {
        std::string events = dir_ + "/cgroup.events";
        events_fd_ = ::open(events.c_str(), O_RDONLY | O_CLOEXEC);
        if (events_fd_ < 0) throw LoadError("cannot open " + events + ": " + std::strerror(errno));
    }
}

CgroupFreezer::~CgroupFreezer() {
    if (control_fd_ >= 0) {
        // Thaw on every path out; the ledger's undo thaws again should we never get here.
        write_state(version_ == CgroupVersion::kV1 ? "THAWED" : "0");
        ::close(control_fd_);
    }
    if (events_fd_ >= 0) ::close(events_fd_);
}

void CgroupFreezer::write_state(const char* text) {
    size_t len = std::strlen(text);
    ssize_t n;
    do {
        n = ::pwrite(control_fd_, text, len, 0);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(len)) {
        throw LoadError(std::string("cannot write ") + text + " to the freezer of " + dir_ + ": " +
                        std::strerror(errno));
    }
}

void CgroupFreezer::freeze() { write_state(version_ == CgroupVersion::kV1 ? "FROZEN" : "1"); }
void CgroupFreezer::thaw() { write_state(version_ == CgroupVersion::kV1 ? "THAWED" : "0"); }

bool CgroupFreezer::frozen() const {
    if (version_ == CgroupVersion::kV1) return trim(read_file(dir_ + "/freezer.state")) == "FROZEN";
    // Reading through the kept fd also re-arms its poll: POLLPRI means "changed since my read".
    char buf[256];
    ssize_t n = ::pread(events_fd_, buf, sizeof buf - 1, 0);
    if (n < 0) throw LoadError("cannot read " + dir_ + "/cgroup.events: " + std::strerror(errno));
    return std::string_view(buf, static_cast<size_t>(n)).find("frozen 1") != std::string_view::npos;
}

bool CgroupFreezer::wait_frozen(uint64_t deadline_ns, int stop_fd) {
    for (;;) {
        if (frozen()) return true;
        uint64_t now = monotonic_ns();
        if (now >= deadline_ns) return false;
        pollfd fds[2] = {{stop_fd, POLLIN, 0}, {events_fd_, POLLPRI, 0}};
        const bool v2 = version_ == CgroupVersion::kV2;
        uint64_t wait_ns = std::min<uint64_t>(deadline_ns - now, v2 ? deadline_ns - now : 100'000);
        timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
        int n = ::ppoll(fds, v2 ? 2 : 1, &ts, nullptr);
        if (n < 0 && errno != EINTR) throw LoadError(std::string("poll on the freezer: ") + std::strerror(errno));
        if (n > 0 && fds[0].revents) return frozen();
    }
}

FreezerKeyHolder::FreezerKeyHolder(Ledger& ledger, int owner, const std::string& v1_mount) {
    freezer_ = std::make_unique<CgroupFreezer>(make_owned_cgroup(ledger, owner, v1_mount, "freeze-key"),
                                               CgroupVersion::kV1);
    freezer_->freeze();
}

FreezerWrites calibrate_freezer(Ledger& ledger, int owner, const CgroupChoice& choice, size_t cycles) {
    const std::string dir = make_owned_cgroup(ledger, owner, choice.mount, "freeze-probe");
    std::vector<uint64_t> freezes, thaws;
    {
        CgroupFreezer probe(dir, choice.version);
        for (size_t i = 0; i < cycles; ++i) {
            const uint64_t t0 = monotonic_ns();
            probe.freeze();
            const uint64_t t1 = monotonic_ns();
            probe.thaw();
            freezes.push_back(t1 - t0);
            thaws.push_back(monotonic_ns() - t1);
        }
    }
    if (std::string why = evacuate_and_remove_cgroup(dir); !why.empty())
        throw LoadError("cannot remove the freezer probe " + dir + ": " + why);
    auto median = [](std::vector<uint64_t>& v) -> uint64_t {
        if (v.empty()) return 0;
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        return v[v.size() / 2];
    };
    return {median(freezes), median(thaws), cycles};
}

}  // namespace spinlab::load
