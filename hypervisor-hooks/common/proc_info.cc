#include "proc_info.h"

#include <signal.h>

#include <cerrno>
#include <charconv>
#include <sstream>

#include "fs_util.h"

namespace spinlab::load {

bool process_alive(int pid) {
    if (pid <= 0) return false;
    if (::kill(pid, 0) == 0 || errno == EPERM) {
        // A zombie still answers kill(); it holds no CPU nor cgroup, so count it as dead.
        try {
            std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
            size_t close = stat.rfind(')');
            return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
        } catch (const LoadError&) {
            return false;
        }
    }
    return false;
}

std::optional<uint64_t> parse_stat_start_time(const std::string& stat_line) {
    size_t close = stat_line.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream in(stat_line.substr(close + 1));
    std::string field;
    // After the comm come fields 3 (state) .. 52; start time is field 22.
    for (int index = 3; in >> field; ++index) {
        if (index == 22) {
            uint64_t v = 0;
            auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
            if (ec != std::errc() || ptr != field.data() + field.size()) return std::nullopt;
            return v;
        }
    }
    return std::nullopt;
}

std::optional<uint64_t> process_start_time(int pid) {
    try {
        return parse_stat_start_time(read_file("/proc/" + std::to_string(pid) + "/stat"));
    } catch (const LoadError&) {
        return std::nullopt;
    }
}

std::optional<int> thread_group_of(int tid) {
    try {
        std::istringstream in(read_file("/proc/" + std::to_string(tid) + "/status"));
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("Tgid:", 0) == 0) return std::stoi(line.substr(5));
        }
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::vector<int> threads_of(int pid) {
    std::vector<int> tids;
    for (const std::string& name : list_directory("/proc/" + std::to_string(pid) + "/task")) {
        int tid = 0;
        auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
        if (ec == std::errc() && ptr == name.data() + name.size()) tids.push_back(tid);
    }
    return tids;
}

std::string thread_name(int pid, int tid) {
    try {
        std::string comm = read_file("/proc/" + std::to_string(pid) + "/task/" +
                                     std::to_string(tid) + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
        return comm;
    } catch (const LoadError&) {
        return "";
    }
}

std::vector<int> parse_pid_lines(const std::string& text) {
    std::vector<int> ids;
    std::istringstream in(text);
    int id = 0;
    while (in >> id) ids.push_back(id);
    return ids;
}

}  // namespace spinlab::load
