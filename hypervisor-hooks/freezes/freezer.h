// Freezing and thawing one cgroup: v1 writes FROZEN/THAWED to freezer.state (which reads
// FREEZING until every task has stopped); v2 writes 1/0 to cgroup.freeze and reports
// "frozen 1" in cgroup.events once every thread has stopped. Both stop the threads at their
// next kernel entry or return to user space, so a spinning thread stops within microseconds.
#pragma once

#include <cstdint>
#include <string>

#include "hypervisor-hooks/cgroups/cgroup_paths.h"

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
    // Waits until the kernel reports the cgroup frozen (true), the CLOCK_MONOTONIC deadline
    // passes or `stop_fd` becomes readable (false). v2: woken by the kernel's own notification
    // (poll POLLPRI on cgroup.events, raised when "frozen" changes); v1 has none, so
    // freezer.state is read every 100 us.
    bool wait_frozen(uint64_t deadline_ns, int stop_fd);
    const std::string& dir() const { return dir_; }

private:
    void write_state(const char* text);
    std::string dir_;
    CgroupVersion version_;
    int control_fd_ = -1;
    int events_fd_ = -1;  // v2 cgroup.events, for poll
};

}  // namespace spinlab::load
