#include "ledger.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "hostlib/run_dir.h"
#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"

namespace spinlab::load {

namespace {
const char* kind_word(LedgerEntry::Kind k) {
    switch (k) {
        case LedgerEntry::Kind::kCgroup: return "cgroup";
        case LedgerEntry::Kind::kMove: return "move";
        case LedgerEntry::Kind::kProcess: return "process";
        case LedgerEntry::Kind::kInstance: return "instance";
    }
    return "?";
}

void check_field(const std::string& s) {
    if (s.find_first_of("\t\n") != std::string::npos) {
        throw LoadError("ledger field '" + s + "' contains a tab or newline");
    }
}

std::string parent_of(const std::string& dir) { return dir.substr(0, dir.rfind('/')); }

// rmdir of a cgroup can fail with EBUSY for a moment after its last task left.
int remove_dir_retrying(const std::string& dir) {
    for (int attempt = 0;; ++attempt) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
        if (errno != EBUSY || attempt >= 50) return errno;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}
}  // namespace

std::string format_ledger_entry(const LedgerEntry& e) {
    check_field(e.path);
    check_field(e.file);
    std::string line = kind_word(e.kind);
    switch (e.kind) {
        case LedgerEntry::Kind::kCgroup:
        case LedgerEntry::Kind::kInstance: return line + "\t" + e.path;
        case LedgerEntry::Kind::kMove:
            return line + "\t" + std::to_string(e.id) + "\t" + e.file + "\t" + e.path;
        case LedgerEntry::Kind::kProcess:
            return line + "\t" + std::to_string(e.id) + "\t" + std::to_string(e.start);
    }
    return line;
}

LedgerEntry parse_ledger_entry(const std::string& line) {
    std::vector<std::string> f = split(line, '\t');
    auto bad = [&](const std::string& why) {
        return LoadError("ledger line '" + line + "': " + why);
    };
    auto absolute = [&](const std::string& p) {
        if (p.empty() || p[0] != '/') throw bad("path '" + p + "' is not absolute");
        return p;
    };
    auto number = [&](const std::string& s) -> uint64_t {
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) {
            throw bad("'" + s + "' is not a number");
        }
        return std::stoull(s);
    };
    LedgerEntry e{};
    if (f[0] == "cgroup" || f[0] == "instance") {
        if (f.size() != 2) throw bad("expected 2 fields");
        e.kind = f[0] == "cgroup" ? LedgerEntry::Kind::kCgroup : LedgerEntry::Kind::kInstance;
        e.path = absolute(f[1]);
    } else if (f[0] == "move") {
        if (f.size() != 4) throw bad("expected 4 fields");
        e.kind = LedgerEntry::Kind::kMove;
        e.id = static_cast<long>(number(f[1]));
        e.file = absolute(f[2]);
        e.path = absolute(f[3]);
    } else if (f[0] == "process") {
        if (f.size() != 3) throw bad("expected 3 fields");
        e.kind = LedgerEntry::Kind::kProcess;
        e.id = static_cast<long>(number(f[1]));
        e.start = number(f[2]);
    } else {
        throw bad("unknown kind '" + f[0] + "'");
    }
    return e;
}

std::vector<LedgerEntry> parse_ledger(const std::string& text) {
    std::vector<LedgerEntry> entries;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        // A torn last line (owner killed mid-write) is dropped, not fatal: its change was
        // never made, because entries are written before the change.
        if (!in.eof() || text.back() == '\n') {
            if (!line.empty()) entries.push_back(parse_ledger_entry(line));
        }
    }
    return entries;
}

void thaw_cgroup(const std::string& dir) {
    if (path_exists(dir + "/freezer.state")) try_write_file(dir + "/freezer.state", "THAWED");
    if (path_exists(dir + "/cgroup.freeze")) try_write_file(dir + "/cgroup.freeze", "0");
}

std::string evacuate_and_remove_cgroup(const std::string& dir) {
    if (!is_directory(dir)) return "";
    std::string problems;
    for (const std::string& child : list_directory(dir)) {
        if (is_directory(dir + "/" + child)) problems += evacuate_and_remove_cgroup(dir + "/" + child);
    }
    thaw_cgroup(dir);
    const std::string parent = parent_of(dir);
    if (path_exists(dir + "/tasks")) {  // v1: threads move one by one
        for (int tid : parse_pid_lines(read_file(dir + "/tasks"))) {
            try_write_file(parent + "/tasks", std::to_string(tid));
        }
    } else {  // v2: a threaded cgroup moves threads, a domain moves processes
        std::string type = path_exists(dir + "/cgroup.type") ? trim(read_file(dir + "/cgroup.type")) : "";
        if (type == "threaded") {
            for (int tid : parse_pid_lines(read_file(dir + "/cgroup.threads"))) {
                try_write_file(parent + "/cgroup.threads", std::to_string(tid));
            }
        } else if (path_exists(dir + "/cgroup.procs")) {
            for (int pid : parse_pid_lines(read_file(dir + "/cgroup.procs"))) {
                try_write_file(parent + "/cgroup.procs", std::to_string(pid));
            }
        }
    }
    if (int err = remove_dir_retrying(dir)) {
        problems += "cannot remove cgroup " + dir + ": " + std::strerror(err) + "\n";
    }
    return problems;
}

std::string remove_trace_instance(const std::string& dir) {
    if (!is_directory(dir)) return "";
    try_write_file(dir + "/tracing_on", "0");
    try_write_file(dir + "/events/enable", "0");
    if (int err = remove_dir_retrying(dir)) {
        return "cannot remove trace instance " + dir + ": " + std::strerror(err) + "\n";
    }
    return "";
}

std::vector<std::string> undo_ledger(const std::vector<LedgerEntry>& entries) {
    std::vector<std::string> problems;
    auto note = [&](const std::string& text) {
        for (const std::string& line : split(text, '\n')) {
            if (!line.empty()) problems.push_back(line);
        }
    };
    for (const LedgerEntry& e : entries) {
        if (e.kind != LedgerEntry::Kind::kProcess) continue;
        auto start = process_start_time(static_cast<int>(e.id));
        if (start && *start == e.start) {
            ::kill(static_cast<pid_t>(e.id), SIGKILL);
            // Reaps it when it is our child; harmless (ECHILD) when it is not.
            ::waitpid(static_cast<pid_t>(e.id), nullptr, 0);
        }
    }
    for (const LedgerEntry& e : entries) {
        if (e.kind == LedgerEntry::Kind::kCgroup) thaw_cgroup(e.path);
    }
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        switch (it->kind) {
            case LedgerEntry::Kind::kMove: {
                int err = try_write_file(it->file, std::to_string(it->id));
                if (err && err != ESRCH && err != ENOENT) {
                    note("cannot move " + std::to_string(it->id) + " back to " + it->file + ": " +
                         std::strerror(err));
                }
                break;
            }
            case LedgerEntry::Kind::kCgroup: note(evacuate_and_remove_cgroup(it->path)); break;
            case LedgerEntry::Kind::kInstance: note(remove_trace_instance(it->path)); break;
            case LedgerEntry::Kind::kProcess: break;
        }
    }
    return problems;
}

std::string Ledger::file_for(const std::string& state_dir, int owner_pid) {
    return state_dir + "/" + owned_name(owner_pid, "ledger");
}

Ledger::Ledger(std::string state_dir, int owner_pid) : file_(file_for(state_dir, owner_pid)) {
    // Where this user may not write: how to choose another run directory (collector/run_dir.h).
    const std::string way_out = std::string(" (") + run_dir_hint() + ", or pass --state-dir)";
    try {
        make_directories(state_dir);
    } catch (const LoadError& e) {
        throw LoadError(e.what() + way_out);
    }
    fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        const int err = errno;
        throw LoadError("cannot create ledger " + file_ + ": " + std::strerror(err) +
                        (err == EACCES || err == EPERM ? way_out : ""));
    }
}

Ledger::~Ledger() {
    undo_all();
}

void Ledger::record(const LedgerEntry& e) {
    std::string line = format_ledger_entry(e) + "\n";
    if (fd_ >= 0 && ::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        throw LoadError("cannot append to ledger " + file_ + ": " + std::strerror(errno));
    }
    entries_.push_back(e);
}

std::vector<std::string> Ledger::undo_all() {
    std::vector<std::string> problems = undo_ledger(entries_);
    entries_.clear();
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
        ::unlink(file_.c_str());
    }
    return problems;
}

}  // namespace spinlab::load
