// experiments/runner/privilege.cc: see privilege.h.
#include "privilege.h"

#include <pwd.h>
#include <sstream>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hostlib/error.h"
#include "hostlib/run_dir.h"
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
        if (p.kind != PhaseKind::kFreeze && p.kind != PhaseKind::kThrottle) continue;
        const bool freeze = p.kind == PhaseKind::kFreeze;
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

namespace {
std::string user_name() {
    const passwd* pw = getpwuid(geteuid());
    return pw ? pw->pw_name : "uid " + std::to_string(geteuid());
}
}  // namespace

std::string cgroup_refusal(const std::vector<Phase>& phases) {
    if (geteuid() == 0) return "";
    std::string mounts;
    try {
        mounts = read_text("/proc/mounts");
    } catch (const std::exception&) {
    }
    return cgroup_refusal(phases, mounts, [](const std::string& d) { return access(d.c_str(), W_OK | X_OK) == 0; },
                          user_name());
}

std::string run_dir_refusal(const std::string& dir, const std::string& user,
                            const std::function<int(const std::string&)>& access_error) {
    // The nearest of dir and its parents that exists: there the missing ones would be made.
    std::filesystem::path p(dir);
    int err = 0;
    for (;;) {
        err = access_error(p.empty() ? "." : p.string());
        if (err != ENOENT || p.empty() || p.parent_path() == p) break;
        p = p.parent_path();
    }
    std::string at = p.empty() ? "." : p.string();
    const bool create = at != dir;
    if (err == 0 && !create) {  // it exists: spinlab-vm makes the VM's directory in its vm/
        at = (std::filesystem::path(dir) / "vm").string();
        err = access_error(at);
        if (err == ENOENT) err = 0;
    }
    if (err == 0) return "";
    return "user " + user + " may not " + (create ? "create" : "write") + " the run directory " + dir + " (" + at +
           ": " + std::strerror(err) + "): " + spinlab::run_dir_hint();
}

std::string run_dir_refusal() {
    std::string dir;
    try {
        dir = spinlab::run_dir();
    } catch (const collect::CollectError& e) {
        return e.what();
    }
    return run_dir_refusal(dir, user_name(), [](const std::string& path) {
        return access(path.c_str(), W_OK | X_OK) == 0 ? 0 : errno;
    });
}

}  // namespace spinlab::run
