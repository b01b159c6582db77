#include "cgroup_paths.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
// Mount options of a v1 cgroup mount that are not controllers.
bool is_generic_option(const std::string& opt) {
    static const std::set<std::string> kGeneric = {
        "rw",    "ro",          "relatime",      "noatime",     "nosuid",  "nodev",
        "noexec", "xattr",      "clone_children", "noprefix",  "cpuset_v2_mode",
        "strictatime", "nodiratime"};
    return kGeneric.count(opt) || opt.rfind("name=", 0) == 0 || opt.rfind("release_agent=", 0) == 0;
}

// /proc/mounts escapes spaces and a few other characters as octal (\040).
std::string unescape_mount_field(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool ok = true;
            for (size_t k = 1; k <= 3; ++k) {
                char c = s[i + k];
                if (c < '0' || c > '7') ok = false;
                v = v * 8 + (c - '0');
            }
            if (ok) {
                out += static_cast<char>(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

bool valid_tag(const std::string& tag) {
    if (tag.empty() || tag.size() > 40) return false;
    return std::all_of(tag.begin(), tag.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    });
}
}  // namespace

std::vector<CgroupMount> parse_cgroup_mounts(const std::string& proc_mounts) {
    std::vector<CgroupMount> mounts;
    std::istringstream in(proc_mounts);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string source, target, type, options;
        if (!(fields >> source >> target >> type >> options)) continue;
        if (type == "cgroup2") {
            mounts.push_back({unescape_mount_field(target), CgroupVersion::kV2, {}});
        } else if (type == "cgroup") {
            CgroupMount m{unescape_mount_field(target), CgroupVersion::kV1, {}};
            for (const std::string& opt : split(options, ',')) {
                if (!is_generic_option(opt)) m.controllers.push_back(opt);
            }
            mounts.push_back(m);
        }
    }
    return mounts;
}

std::optional<CgroupMount> find_v1_mount(const std::vector<CgroupMount>& mounts,
                                         const std::string& controller) {
    for (const CgroupMount& m : mounts) {
        if (m.version != CgroupVersion::kV1) continue;
        if (std::find(m.controllers.begin(), m.controllers.end(), controller) !=
            m.controllers.end()) {
            return m;
        }
    }
    return std::nullopt;
}

std::optional<CgroupMount> find_v2_mount(const std::vector<CgroupMount>& mounts) {
    for (const CgroupMount& m : mounts) {
        if (m.version == CgroupVersion::kV2) return m;
    }
    return std::nullopt;
}

std::string cgroup_of_task(const std::string& proc_cgroup, const CgroupMount& mount) {
    std::istringstream in(proc_cgroup);
    std::string line;
    while (std::getline(in, line)) {
        // hierarchy-id:controller-list:path; the path may itself contain ':'.
        size_t c1 = line.find(':');
        size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string::npos) continue;
        std::string id = line.substr(0, c1);
        std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
        std::string path = line.substr(c2 + 1);
        if (mount.version == CgroupVersion::kV2) {
            if (id == "0" && controllers.empty()) return path;
            continue;
        }
        for (const std::string& c : split(controllers, ',')) {
            if (std::find(mount.controllers.begin(), mount.controllers.end(), c) !=
                mount.controllers.end()) {
                return path;
            }
        }
    }
    throw LoadError("the task's cgroup list has no entry for the hierarchy at " + mount.path);
}

std::string owned_name(int owner_pid, const std::string& tag) {
    if (owner_pid <= 0) throw LoadError("owner pid must be positive");
    if (!valid_tag(tag)) {
        throw LoadError("cgroup/instance tag '" + tag +
                        "' must be 1-40 characters of letters, digits, '-' or '_'");
    }
    return "spinlab-" + std::to_string(owner_pid) + "-" + tag;
}

std::optional<int> owner_of_name(const std::string& name) {
    const std::string prefix = "spinlab-";
    if (name.rfind(prefix, 0) != 0) return std::nullopt;
    size_t start = prefix.size();
    size_t dash = name.find('-', start);
    if (dash == std::string::npos || dash == start || dash + 1 >= name.size()) return std::nullopt;
    int pid = 0;
    auto [ptr, ec] = std::from_chars(name.data() + start, name.data() + dash, pid);
    if (ec != std::errc() || ptr != name.data() + dash || pid <= 0) return std::nullopt;
    return pid;
}

std::string join_cgroup_path(const std::string& mount, const std::string& relative) {
    if (mount.empty() || mount[0] != '/') {
        throw LoadError("cgroup mount '" + mount + "' is not an absolute path");
    }
    if (relative.empty() || relative[0] != '/') {
        throw LoadError("cgroup path '" + relative + "' must start with '/'");
    }
    std::string out = mount;
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    if (relative == "/") return out;
    for (const std::string& part : split(relative.substr(1), '/')) {
        if (part.empty() || part == "." || part == "..") {
            throw LoadError("cgroup path '" + relative + "' has an empty, '.' or '..' component");
        }
        out += "/" + part;
    }
    return out;
}

}  // namespace spinlab::load
