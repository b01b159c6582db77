// Freezing and thawing one cgroup: v1 writes FROZEN/THAWED to freezer.state (which reads
// FREEZING until every task has stopped); v2 writes 1/0 to cgroup.freeze and reports
// "frozen 1" in cgroup.events once every thread has stopped. Both stop the threads at their
// next kernel entry or return to user space, so a spinning thread stops within microseconds.
#pragma once

#include <string>

#include "cgroup_paths.h"

namespace spinlab::load {

class CgroupFreezer {
public:
    CgroupFreezer(std::string dir, CgroupVersion version);
    // Keeps the control files open: each freeze/thaw is then a single write(2).
    ~CgroupFreezer();
    CgroupFreezer(const CgroupFreezer&) = delete;
    CgroupFreezer& operator=(const CgroupFreezer&) = delete;

    void freeze();
    void thaw();
    // Whether the kernel reports the cgroup completely frozen now.
    bool frozen() const;
    const std::string& dir() const { return dir_; }

private:
    void write_state(const char* text);
    std::string dir_;
    CgroupVersion version_;
    int control_fd_ = -1;
};

}  // namespace spinlab::load
