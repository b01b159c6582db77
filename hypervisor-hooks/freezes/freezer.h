// Freezing and thawing one cgroup: v1 writes FROZEN/THAWED to freezer.state (which reads
// FREEZING until every task has stopped); v2 writes 1/0 to cgroup.freeze and reports
// "frozen 1" in cgroup.events once every thread has stopped. Both stop the threads at their
// next kernel entry or return to user space, so a spinning thread stops within microseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/cgroups/thread_cgroup.h"
#include "hypervisor-hooks/cleanup/ledger.h"

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

// cgroup v1 only. The kernel keeps a static key (freezer_active) on while any v1 cgroup is
// freezing: the first freeze turns it on and the last thaw off, each by patching kernel text on
// every CPU, inside the write. With one thread frozen at a time every freeze and every thaw is
// such a first and last: on a nested-virtualised host each write took about 3 ms, so every thaw
// came 3 ms late (0.11 ms median on a quieter host). The holder keeps one empty cgroup of the
// injector's own frozen for its whole life, so the key stays on and a victim's write only counts
// (0.009 ms median on that quieter host). The cgroup is in the ledger: thawed and removed on
// every way out.
class FreezerKeyHolder {
public:
    FreezerKeyHolder(Ledger& ledger, int owner, const std::string& v1_mount);
    const std::string& dir() const { return freezer_->dir(); }

private:
    std::unique_ptr<CgroupFreezer> freezer_;  // its destructor thaws
};

// The freezer's write latency on this host, measured before the first freeze: an empty cgroup
// of the owner's own in `choice`'s hierarchy frozen and thawed `cycles` times, then removed.
struct FreezerWrites {
    uint64_t freeze_ns = 0, thaw_ns = 0;  // medians
    size_t cycles = 0;
};
FreezerWrites calibrate_freezer(Ledger& ledger, int owner, const CgroupChoice& choice, size_t cycles);

}  // namespace spinlab::load
