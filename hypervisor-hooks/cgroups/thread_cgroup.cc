#include "thread_cgroup.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
bool has_word(const std::string& text, const std::string& word) {
    for (const std::string& w : split(trim(text), ' ')) {
        if (w == word) return true;
    }
    return false;
}

void make_cgroup(Ledger& ledger, const std::string& dir) {
    ledger.record({LedgerEntry::Kind::kCgroup, dir, "", 0, 0});
    if (::mkdir(dir.c_str(), 0755) < 0) {
        throw LoadError("cannot create cgroup " + dir + ": " + std::strerror(errno));
    }
}
}  // namespace

std::string make_owned_cgroup(Ledger& ledger, int owner, const std::string& mount, const std::string& tag) {
    const std::string dir = mount + "/" + owned_name(owner, tag);
    make_cgroup(ledger, dir);
    return dir;
}

CgroupMethod parse_cgroup_method(const std::string& text, const std::string& option) {
    if (text == "auto") return CgroupMethod::kAuto;
    if (text == "v1") return CgroupMethod::kV1;
    if (text == "v2") return CgroupMethod::kV2;
    throw LoadError("--" + option + " '" + text + "' must be auto, v1 or v2");
}

CgroupChoice choose_hierarchy(const std::string& controller, CgroupMethod method,
                              const std::vector<CgroupMount>& mounts,
                              const std::string& v2_controllers) {
    auto v1 = find_v1_mount(mounts, controller);
    auto v2 = find_v2_mount(mounts);
    // The v2 freezer is part of the core (cgroup.freeze), other controllers must be listed.
    bool v2_ok = v2 && (controller == "freezer" || has_word(v2_controllers, controller));
    // auto: both freezers stop a spinning thread within 0.2 ms here, but v1's write patches a
    // static key on every first freeze and last thaw (tens of ms under load, README) and v2's
    // write takes 0.013 ms (median), so v2 wins for freezing. For cpu, v1 wins: it moves single
    // threads and leaves the process where it is.
    bool prefer_v2 = controller == "freezer";
    if (method == CgroupMethod::kAuto && prefer_v2 && v2_ok) return {CgroupVersion::kV2, v2->path};
    if (method != CgroupMethod::kV2 && v1) return {CgroupVersion::kV1, v1->path};
    if (method != CgroupMethod::kV1 && v2_ok) return {CgroupVersion::kV2, v2->path};
    std::string what = "the " + controller + " controller is ";
    if (method == CgroupMethod::kV1) throw LoadError(what + "not mounted as a cgroup v1 hierarchy");
    std::string v2_text = v2 ? "cgroup v2 at " + v2->path + " offers only '" + trim(v2_controllers) + "'"
                             : "no cgroup v2 hierarchy is mounted";
    if (method == CgroupMethod::kV2) throw LoadError(what + "not available in cgroup v2: " + v2_text);
    throw LoadError(what + "neither mounted as cgroup v1 nor available in cgroup v2 (" + v2_text + ")");
}

CgroupChoice choose_hierarchy_on_host(const std::string& controller, CgroupMethod method) {
    std::vector<CgroupMount> mounts = parse_cgroup_mounts(read_file("/proc/mounts"));
    std::string v2_controllers;
    if (auto v2 = find_v2_mount(mounts)) {
        if (path_exists(v2->path + "/cgroup.controllers")) {
            v2_controllers = read_file(v2->path + "/cgroup.controllers");
        }
    }
    return choose_hierarchy(controller, method, mounts, v2_controllers);
}

ThreadCgroups::ThreadCgroups(Ledger& ledger, int owner, std::string tag, CgroupChoice choice,
                             std::string controller)
    : ledger_(ledger), owner_(owner), tag_(std::move(tag)), choice_(std::move(choice)),
      controller_(std::move(controller)) {}

std::string ThreadCgroups::add(const ThreadTarget& target) {
    return choice_.version == CgroupVersion::kV1 ? add_v1(target) : add_v2(target);
}

std::string ThreadCgroups::add_v1(const ThreadTarget& t) {
    const std::string tid = std::to_string(t.tid);
    CgroupMount mount{choice_.mount, CgroupVersion::kV1, {controller_}};
    std::string origin = join_cgroup_path(
        choice_.mount,
        cgroup_of_task(read_file("/proc/" + std::to_string(t.pid) + "/task/" + tid + "/cgroup"), mount));
    std::string dir = choice_.mount + "/" + owned_name(owner_, tag_ + "-" + tid);
    make_cgroup(ledger_, dir);
    ledger_.record({LedgerEntry::Kind::kMove, dir, origin + "/tasks", t.tid, 0});
    write_file(dir + "/tasks", tid);
    return dir;
}

std::string ThreadCgroups::add_v2(const ThreadTarget& t) {
    const std::string pid = std::to_string(t.pid);
    auto it = v2_domains_.find(t.pid);
    if (it == v2_domains_.end()) {
        CgroupMount mount{choice_.mount, CgroupVersion::kV2, {}};
        std::string origin = join_cgroup_path(
            choice_.mount, cgroup_of_task(read_file("/proc/" + pid + "/cgroup"), mount));
        if (controller_ != "freezer") {
            // A controller reaches a child only if every ancestor enables it.
            std::string root_sub = read_file(choice_.mount + "/cgroup.subtree_control");
            if (!has_word(root_sub, controller_)) {
                write_file(choice_.mount + "/cgroup.subtree_control", "+" + controller_);
            }
        }
        std::string domain = choice_.mount + "/" + owned_name(owner_, tag_ + "-" + pid);
        make_cgroup(ledger_, domain);
        it = v2_domains_.emplace(t.pid, domain).first;
        // The move back is recorded now, and undone before the children are removed.
        ledger_.record({LedgerEntry::Kind::kMove, domain, origin + "/cgroup.procs", t.pid, 0});
    }
    const std::string& domain = it->second;
    std::string child = domain + "/t" + std::to_string(t.tid);
    make_cgroup(ledger_, child);
    write_file(child + "/cgroup.type", "threaded");
    if (controller_ != "freezer") {
        std::string sub = read_file(domain + "/cgroup.subtree_control");
        if (!has_word(sub, controller_)) write_file(domain + "/cgroup.subtree_control", "+" + controller_);
    }
    write_file(domain + "/cgroup.procs", pid);
    write_file(child + "/cgroup.threads", std::to_string(t.tid));
    return child;
}

}  // namespace spinlab::load
