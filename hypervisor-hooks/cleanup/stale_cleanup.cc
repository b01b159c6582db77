#include "stale_cleanup.h"

#include <unistd.h>

#include "hostlib/run_dir.h"
#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/timeline/tracefs.h"
#include "ledger.h"

namespace spinlab::load {

namespace {
bool is_stale(const std::string& name, std::optional<int> owner) {
    std::optional<int> pid = owner_of_name(name);
    if (!pid) return false;
    if (owner) return *pid == *owner;
    return !process_alive(*pid);
}

void collect(CleanupReport& report, const std::string& what, const std::string& problems) {
    report.removed.push_back(what);
    for (const std::string& p : split(problems, '\n')) {
        if (!p.empty()) report.problems.push_back(p);
    }
}
}  // namespace

std::string default_state_dir() { return spinlab::run_dir(); }

CleanupReport cleanup_stale(const std::string& state_dir, std::optional<int> owner) {
    CleanupReport report;
    for (const std::string& name : list_directory(state_dir)) {
        if (name.size() < 7 || name.substr(name.size() - 7) != "-ledger") continue;
        if (!is_stale(name, owner)) continue;
        const std::string path = state_dir + "/" + name;
        try {
            std::vector<std::string> problems = undo_ledger(parse_ledger(read_file(path)));
            report.problems.insert(report.problems.end(), problems.begin(), problems.end());
        } catch (const LoadError& e) {
            report.problems.push_back(e.what());
        }
        ::unlink(path.c_str());
        report.removed.push_back(path);
    }
    std::string mounts;
    try {
        mounts = read_file("/proc/mounts");
    } catch (const LoadError& e) {
        report.problems.push_back(e.what());
    }
    for (const CgroupMount& m : parse_cgroup_mounts(mounts)) {
        for (const std::string& name : list_directory(m.path)) {
            if (is_stale(name, owner) && is_directory(m.path + "/" + name)) {
                collect(report, m.path + "/" + name, evacuate_and_remove_cgroup(m.path + "/" + name));
            }
        }
    }
    if (std::optional<std::string> root = find_tracefs_root(mounts)) {
        const std::string instances = *root + "/instances";
        for (const std::string& name : list_directory(instances)) {
            if (is_stale(name, owner)) {
                collect(report, instances + "/" + name, remove_trace_instance(instances + "/" + name));
            }
        }
    }
    return report;
}

}  // namespace spinlab::load
