// hostlib/mapped_region.cc: see mapped_region.h.
#include "mapped_region.h"

#include <fcntl.h>
#include <spinlab/shm.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.h"

namespace spinlab::collect {

MappedRegion::MappedRegion(const std::string& path, Access access, Links links) : path_(path) {
    const bool rw = access == Access::kReadWrite;
    const bool refuse_links = links == Links::kRefuse;
    fd_ = ::open(path.c_str(), (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | (refuse_links ? O_NOFOLLOW | O_NOCTTY : 0));
    if (fd_ < 0)
        throw CollectError(kExitNoVm, "no shared region at " + path + " (" + std::strerror(errno) + ")");
    struct stat st;
    const bool stat_ok = ::fstat(fd_, &st) == 0;
    if (stat_ok && refuse_links && !S_ISREG(st.st_mode)) {
        ::close(fd_);
        throw CollectError(kExitFailure, path + " is not a regular file");
    }
    if (!stat_ok || st.st_size < off_t(sizeof(RegionHeader))) {
        ::close(fd_);
        throw CollectError(kExitFailure, path + " is too small to be a spinlab shared region");
    }
    size_ = size_t(st.st_size);
    void* p = ::mmap(nullptr, size_, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
        const int e = errno;
        ::close(fd_);
        throw CollectError(kExitFailure, std::string("cannot map ") + path + (rw ? " read-write" : "") + " (" +
                                             std::strerror(e) + ")");
    }
    base_ = static_cast<uint8_t*>(p);
}

MappedRegion::~MappedRegion() {
    ::munmap(base_, size_);
    ::close(fd_);
}

bool MappedRegion::unlinked() const {
    struct stat st;
    return ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

}  // namespace spinlab::collect
