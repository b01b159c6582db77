// Pure cgroup path logic: which hierarchies are mounted (from /proc/mounts text), where a thread
// sits in one (from /proc/<pid>/task/<tid>/cgroup text), and the names of the cgroups we create.
//
// Every cgroup, tracefs instance and ledger spinlab-load creates is named
//     spinlab-<owner pid>-<tag>
// so a later run, or `spinlab-load cleanup`, can tell which are stale: the owner pid is dead.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace spinlab::load {

enum class CgroupVersion { kV1, kV2 };

struct CgroupMount {
    std::string path;                      // mount point, e.g. /sys/fs/cgroup/freezer
    CgroupVersion version;
    std::vector<std::string> controllers;  // v1: from the mount options; v2: filled by caller
};

// Parses /proc/mounts text; keeps cgroup (v1) and cgroup2 mounts. For v1 the controllers are
// the mount options that are not generic flags (rw, relatime, ...) nor name=....
std::vector<CgroupMount> parse_cgroup_mounts(const std::string& proc_mounts);

// The v1 hierarchy that carries `controller`, if mounted.
std::optional<CgroupMount> find_v1_mount(const std::vector<CgroupMount>& mounts,
                                         const std::string& controller);
// The (first) cgroup2 mount, if any.
std::optional<CgroupMount> find_v2_mount(const std::vector<CgroupMount>& mounts);

// The path of a task inside one hierarchy, from /proc/<pid>/task/<tid>/cgroup text
// ("6:freezer:/foo" for v1, "0::/bar" for v2). Throws if the hierarchy is not listed.
std::string cgroup_of_task(const std::string& proc_cgroup, const CgroupMount& mount);

// "spinlab-<pid>-<tag>". Tag: letters, digits, '-' and '_' only, 1..40 characters.
std::string owned_name(int owner_pid, const std::string& tag);
// The owner pid of a name made by owned_name, or nullopt for any other name.
std::optional<int> owner_of_name(const std::string& name);

// base + "/" + relative, where relative is a cgroup path as the kernel prints it ("/" or
// "/a/b"). Rejects ".." and empty components so nothing escapes the hierarchy.
std::string join_cgroup_path(const std::string& mount, const std::string& relative);

}  // namespace spinlab::load
