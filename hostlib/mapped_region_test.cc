// hostlib/mapped_region_test.cc: the one mapper of the shared-region file: what each failure
// throws, that nothing stays open after it (the trace drain's own mapper leaked its descriptor
// when the file was too small), and the two access modes.
#include "mapped_region.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <spinlab/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "error.h"

namespace spinlab::collect {
namespace {

int open_fds() {
    int n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    while (::readdir(d)) ++n;
    ::closedir(d);
    return n;
}

std::string temp_file(size_t bytes) {
    char path[] = "/tmp/spinlab-mapped-region-XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    std::vector<uint8_t> zeros(bytes, 0);
    EXPECT_EQ(::write(fd, zeros.data(), bytes), ssize_t(bytes));
    ::close(fd);
    return path;
}

int exit_of(const std::string& path, MappedRegion::Access a) {
    try {
        MappedRegion m(path, a);
    } catch (const CollectError& e) {
        return e.exit_code();
    }
    return 0;
}

TEST(MappedRegion, AMissingFileIsNoVm) {
    EXPECT_EQ(exit_of("/tmp/spinlab-no-such-region", MappedRegion::Access::kRead), kExitNoVm);
}

TEST(MappedRegion, AFileSmallerThanAHeaderFailsAndLeavesNothingOpen) {
    const std::string path = temp_file(sizeof(RegionHeader) - 1);
    const int before = open_fds();
    for (auto a : {MappedRegion::Access::kRead, MappedRegion::Access::kReadWrite})
        EXPECT_EQ(exit_of(path, a), kExitFailure);
    EXPECT_EQ(open_fds(), before);
    ::unlink(path.c_str());
}

TEST(MappedRegion, ReadWriteWritesTheFileAndReadOnlySeesIt) {
    const std::string path = temp_file(8192);
    const int before = open_fds();
    {
        MappedRegion rw(path, MappedRegion::Access::kReadWrite);
        MappedRegion ro(path, MappedRegion::Access::kRead);
        ASSERT_EQ(rw.size(), 8192u);
        rw.data()[4100] = 0x5a;
        EXPECT_EQ(ro.data()[4100], 0x5a);
        EXPECT_FALSE(ro.unlinked());
        ::unlink(path.c_str());
        EXPECT_TRUE(ro.unlinked());  // the VM launcher removed it: the VM is gone
    }
    EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace spinlab::collect
