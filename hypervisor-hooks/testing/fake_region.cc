// Test and bench helper: `spinlab-fake-region PATH CPUS` creates (or truncates) PATH and lays
// out a spinlab shared region for CPUS CPUs in it, as the guest kernel does at boot
// (channel/region_header.h: region_layout), with a 64 KiB trace area; then exits. The file
// stays: the caller removes it. For host tools that need a laid-out region without a guest
// (spinlab-load --vcpu-state in scripts/bench-vcpu-state.sh).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "channel/region_header.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: spinlab-fake-region PATH CPUS\n");
        return 2;
    }
    const char* path = argv[1];
    char* end = nullptr;
    const unsigned long cpus = std::strtoul(argv[2], &end, 10);
    if (!*argv[2] || *end || cpus == 0 || cpus > spinlab::kRegionMaxCpus) {
        std::fprintf(stderr, "spinlab-fake-region: CPUS '%s' must be 1..%u\n", argv[2], spinlab::kRegionMaxCpus);
        return 2;
    }
    const uint64_t size = spinlab::region_size_needed(uint32_t(cpus), 64 * 1024);
    const int fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || ::ftruncate(fd, off_t(size)) != 0) {
        std::fprintf(stderr, "spinlab-fake-region: %s: %s\n", path, std::strerror(errno));
        return 1;
    }
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        std::fprintf(stderr, "spinlab-fake-region: mmap %s: %s\n", path, std::strerror(errno));
        return 1;
    }
    const spinlab::RegionError e = spinlab::region_layout(p, size, uint32_t(cpus), 0, 0);
    if (e != spinlab::RegionError::kNone) {
        std::fprintf(stderr, "spinlab-fake-region: %s\n", spinlab::region_error_name(e));
        return 1;
    }
    ::munmap(p, size);
    ::close(fd);
    return 0;
}
