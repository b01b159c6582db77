#include "freezer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs_util.h"

namespace spinlab::load {

CgroupFreezer::CgroupFreezer(std::string dir, CgroupVersion version)
    : dir_(std::move(dir)), version_(version) {
    std::string file = dir_ + (version_ == CgroupVersion::kV1 ? "/freezer.state" : "/cgroup.freeze");
    control_fd_ = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (control_fd_ < 0) {
        throw LoadError("cannot open " + file + ": " + std::strerror(errno) +
                        (version_ == CgroupVersion::kV2 ? " (cgroup.freeze needs Linux 5.2+)" : ""));
    }
}

CgroupFreezer::~CgroupFreezer() {
    if (control_fd_ >= 0) {
        // Thaw on every path out; the ledger's undo thaws again should we never get here.
        write_state(version_ == CgroupVersion::kV1 ? "THAWED" : "0");
        ::close(control_fd_);
    }
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
    return read_file(dir_ + "/cgroup.events").find("frozen 1") != std::string::npos;
}

}  // namespace spinlab::load
