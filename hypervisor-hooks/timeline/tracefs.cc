#include "tracefs.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "sched_switch_parse.h"

namespace spinlab::load {

std::optional<std::string> find_tracefs_root(const std::string& proc_mounts) {
    std::istringstream in(proc_mounts);
    std::string line;
    std::optional<std::string> found;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string source, target, type;
        if (!(fields >> source >> target >> type) || type != "tracefs") continue;
        // Prefer the canonical mount point when tracefs is mounted more than once.
        if (!found || target == "/sys/kernel/tracing") found = target;
    }
    return found;
}

std::string ensure_tracefs() {
    if (auto root = find_tracefs_root(read_file("/proc/mounts"))) return *root;
    const std::string target = "/sys/kernel/tracing";
    if (::mount("nodev", target.c_str(), "tracefs", 0, nullptr) < 0) {
        throw LoadError("tracefs is not mounted and mounting it at " + target + " failed: " +
                        std::strerror(errno) + " (run as root, or mount -t tracefs nodev " +
                        target + ")");
    }
    return target;
}

std::string sched_switch_filter(const std::vector<int>& tids) {
    if (tids.empty()) throw LoadError("timeline needs at least one thread id");
    std::string filter;
    for (int tid : tids) {
        if (!filter.empty()) filter += " || ";
        filter += "prev_pid == " + std::to_string(tid) + " || next_pid == " + std::to_string(tid);
    }
    return filter;
}

std::string common_pid_filter(const std::vector<int>& tids) {
    if (tids.empty()) throw LoadError("timeline needs at least one thread id");
    std::string filter;
    for (int tid : tids) filter += (filter.empty() ? "" : " || ") + std::string("common_pid == ") + std::to_string(tid);
    return filter;
}

TraceInstance::TraceInstance(Ledger& ledger, int owner_pid, const std::string& tag, const std::string& clock,
                             const std::vector<int>& tids, int buffer_kb, bool running_stamps) {
    const std::string root = ensure_tracefs();
    dir_ = root + "/instances/" + owned_name(owner_pid, tag);
    std::string clocks = read_file(root + "/trace_clock");
    bool known = false;
    for (std::string c : split(trim(clocks), ' ')) {
        if (c.size() > 2 && c.front() == '[') c = c.substr(1, c.size() - 2);
        known = known || c == clock;
    }
    if (!known) {
        throw LoadError("--trace-clock '" + clock + "' is not offered by this kernel (it offers: " +
                        trim(clocks) + ")");
    }
    ledger.record({LedgerEntry::Kind::kInstance, dir_, "", 0, 0});
    if (::mkdir(dir_.c_str(), 0755) < 0) {
        throw LoadError("cannot create trace instance " + dir_ + ": " + std::strerror(errno));
    }
    write_file(dir_ + "/tracing_on", "0");
    write_file(dir_ + "/trace_clock", clock);
    if (buffer_kb > 0) write_file(dir_ + "/buffer_size_kb", std::to_string(buffer_kb));
    const std::string event = dir_ + "/events/sched/sched_switch";
    if (!is_directory(event)) {
        throw LoadError("the sched:sched_switch tracepoint is missing in " + dir_ + "/events");
    }
    check_sched_switch_format(read_file(event + "/format"));
    write_file(event + "/filter", sched_switch_filter(tids));
    write_file(event + "/enable", "1");
    const std::string timer = dir_ + "/events/irq_vectors/local_timer_entry";
    if (running_stamps && is_directory(timer)) {  // x86 only
        write_file(timer + "/filter", common_pid_filter(tids));
        write_file(timer + "/enable", "1");
        running_stamps_ = true;
    }
    write_file(dir_ + "/trace", "");  // empty the buffer
    pipe_fd_ = ::open((dir_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (pipe_fd_ < 0) {
        throw LoadError("cannot open " + dir_ + "/trace_pipe: " + std::strerror(errno));
    }
}

TraceInstance::~TraceInstance() {
    if (pipe_fd_ >= 0) ::close(pipe_fd_);
    // The instance directory itself is removed by the ledger's undo (also after a crash).
    remove_trace_instance(dir_);
}

void TraceInstance::start() { write_file(dir_ + "/tracing_on", "1"); }
void TraceInstance::stop() { write_file(dir_ + "/tracing_on", "0"); }

void TraceInstance::mark(const std::string& text) { write_file(dir_ + "/trace_marker", text); }

std::string TraceInstance::read_available() {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(pipe_fd_, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) {
            throw LoadError("cannot read " + dir_ + "/trace_pipe: " + std::strerror(errno));
        }
        return out;
    }
}

}  // namespace spinlab::load
