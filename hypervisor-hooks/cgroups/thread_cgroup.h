// One cgroup per target thread, in the hierarchy that offers the wanted controller:
//
//   v1 (freezer, cpu): <mount>/spinlab-<owner>-<tag>-<tid>; the thread alone is written to
//      its `tasks` file (v1 moves single threads). Undo writes it back to its origin's tasks.
//   v2: threads of a process must stay in one threaded subtree, so the whole process moves
//      into a domain <mount>/spinlab-<owner>-<tag>-<pid>, and each thread into a threaded child
//      t<tid> of it. Undo moves the process back to its origin cgroup. For cpu.max the cpu
//      controller is enabled in the domain's subtree_control (and in the root's when the root
//      offers it but has not enabled it; that is left enabled, as it is shared state).
//
// Every step is written to the ledger before it is taken.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cgroup_paths.h"
#include "hypervisor-hooks/cleanup/ledger.h"
#include "hypervisor-hooks/targets/thread_targets.h"

namespace spinlab::load {

enum class CgroupMethod { kAuto, kV1, kV2 };
CgroupMethod parse_cgroup_method(const std::string& text, const std::string& option);

struct CgroupChoice {
    CgroupVersion version;
    std::string mount;
};

// Picks the hierarchy for `controller` ("freezer" or "cpu"). auto: for the freezer v2 when
// mounted (its write is fast; v1's patches a static key, see README), else v1; for cpu
// v1 when it carries the controller (single threads move, the process stays), else v2. `v2_controllers` is the content
// of the v2 root's cgroup.controllers (the v2 freezer is built in: no controller needed).
// Throws LoadError saying what is mounted when neither works.
CgroupChoice choose_hierarchy(const std::string& controller, CgroupMethod method,
                              const std::vector<CgroupMount>& mounts,
                              const std::string& v2_controllers);
// Same, reading /proc/mounts and the v2 root.
CgroupChoice choose_hierarchy_on_host(const std::string& controller, CgroupMethod method);

// Creates the empty cgroup <mount>/spinlab-<owner>-<tag> (in the ledger first) and returns it.
std::string make_owned_cgroup(Ledger& ledger, int owner, const std::string& mount, const std::string& tag);

class ThreadCgroups {
public:
    ThreadCgroups(Ledger& ledger, int owner, std::string tag, CgroupChoice choice,
                  std::string controller);
    // Moves the thread into a cgroup of its own and returns that cgroup's directory.
    std::string add(const ThreadTarget& target);
    const CgroupChoice& choice() const { return choice_; }

private:
    std::string add_v1(const ThreadTarget& target);
    std::string add_v2(const ThreadTarget& target);
    Ledger& ledger_;
    int owner_;
    std::string tag_;
    CgroupChoice choice_;
    std::string controller_;
    std::map<int, std::string> v2_domains_;  // pid -> domain directory
};

}  // namespace spinlab::load
