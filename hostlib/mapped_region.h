// hostlib/mapped_region.h: the guest's shared-region file (the ivshmem memory backend,
// /dev/shm/spinlab-NAME), opened and mapped whole for the life of the object. The one mapper of
// the host's readers: RegionReader maps it read-only; the trace drain read-write (it gives
// buffers back to the guest), spinlab-load --vcpu-state read-write with Links::kRefuse
// (hypervisor-hooks/vcpu_state/vcpu_state_writer.h). The bytes are the guest's and untrusted: this class
// checks only that the file can be a region (at least a header long); region_parse judges the
// header.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <string>

namespace spinlab::collect {

class MappedRegion {
public:
    enum class Access { kRead, kReadWrite };
    // kRefuse: open with O_NOFOLLOW (a symbolic link as the last component fails, ELOOP) and
    // accept a regular file only, for a writer that a swapped path must not redirect.
    enum class Links { kFollow, kRefuse };

    // Throws CollectError: kExitNoVm when the file cannot be opened (no such VM), kExitFailure
    // when it is smaller than a region header or cannot be mapped. Nothing stays open or mapped
    // after a throw.
    MappedRegion(const std::string& path, Access access, Links links = Links::kFollow);
    ~MappedRegion();
    MappedRegion(const MappedRegion&) = delete;
    MappedRegion& operator=(const MappedRegion&) = delete;

    uint8_t* data() const { return base_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

    // The file was unlinked (the VM launcher removes it when the VM is gone).
    bool unlinked() const;

private:
    std::string path_;
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    size_t size_ = 0;
};

}  // namespace spinlab::collect
