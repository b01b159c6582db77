// experiments/runner/privilege.cc: see privilege.h.
#include "privilege.h"

#include <pwd.h>
#include <sstream>
#include <unistd.h>

#include "text.h"

namespace spinlab::run {

namespace {
// The directories spinlab-load may create its cgroups in for `controller`, from /proc/mounts:
// the cgroup2 mount (its freezer is built in; cpu.max is there when the cpu controller is), and
// a v1 hierarchy that carries the controller.
std::vector<std::string> cgroup_dirs(const std::string& proc_mounts, const std::string& controller) {
    std::vector<std::string> dirs;
    std::istringstream in(proc_mounts);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string source, target, type, options;
        if (!(f >> source >> target >> type >> options)) continue;
        if (type == "cgroup2") dirs.push_back(target);
        if (type == "cgroup" && ("," + options + ",").find("," + controller + ",") != std::string::npos)
            dirs.push_back(target);
    }
    return dirs;
}
}  // namespace

std::string cgroup_refusal(const std::vector<Phase>& phases, const std::string& proc_mounts,
                           const std::function<bool(const std::string&)>& writable, const std::string& user) {
    for (const Phase& p : phases) {
        if (p.kind != PhaseKind::kPreempt && p.kind != PhaseKind::kThrottle) continue;
        const bool freeze = p.kind == PhaseKind::kPreempt;
        const std::vector<std::string> dirs = cgroup_dirs(proc_mounts, freeze ? "freezer" : "cpu");
        bool ok = false;
        for (const std::string& d : dirs) ok = ok || writable(d);
        if (ok) continue;
        const std::string what = freeze ? "freezes vCPUs" : "throttles vCPUs";
        if (dirs.empty())
            return "phase " + p.name() + " " + what + " through a cgroup, and no cgroup hierarchy is mounted: mount "
                   "one (mount -t cgroup2 none /sys/fs/cgroup) or leave the phase out (--run.phases)";
        return "phase " + p.name() + " " + what + " through a cgroup, and user " + user + " may not create one in " +
               dirs.front() + ": run it as root (sudo), have root give this user a cgroup hierarchy it may write, "
               "or leave the phase out (--run.phases)";
    }
    return "";
}

std::string cgroup_refusal(const std::vector<Phase>& phases) {
    if (geteuid() == 0) return "";
    std::string mounts;
    try {
        mounts = read_text("/proc/mounts");
    } catch (const std::exception&) {
    }
    const passwd* pw = getpwuid(geteuid());
    const std::string user = pw ? pw->pw_name : "uid " + std::to_string(geteuid());
    return cgroup_refusal(phases, mounts, [](const std::string& d) { return access(d.c_str(), W_OK | X_OK) == 0; },
                          user);
}

}  // namespace spinlab::run
