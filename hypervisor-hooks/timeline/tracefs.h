// A tracefs instance of our own (/sys/kernel/tracing/instances/spinlab-<pid>-<tag>): its own
// ring buffer, trace clock, event enables and filters, so we never touch the global trace
// buffer or another user's instance. Recorded in the ledger before it is created.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hypervisor-hooks/cleanup/ledger.h"

namespace spinlab::load {

// The tracefs mount point from /proc/mounts text (type tracefs), if mounted.
std::optional<std::string> find_tracefs_root(const std::string& proc_mounts);
// The tracefs root; mounts tracefs at /sys/kernel/tracing when it is not mounted anywhere
// (needs root). The mount is left in place: it is shared, system-wide state, not ours.
std::string ensure_tracefs();

// "prev_pid == 1 || next_pid == 1 || ..." for the sched_switch filter file.
std::string sched_switch_filter(const std::vector<int>& tids);
// "common_pid == a || ..." for events in the context of these threads.
std::string common_pid_filter(const std::vector<int>& tids);

class TraceInstance {
public:
    // Creates the instance, sets its trace clock (must be one the kernel lists in trace_clock),
    // enables sched:sched_switch filtered to `tids`, leaves tracing off. With running_stamps,
    // also the timer interrupt (irq_vectors:local_timer_entry) in the context of `tids`, where
    // the kernel has it (running_stamps() says whether it did; sched_switch_parse.h).
    TraceInstance(Ledger& ledger, int owner_pid, const std::string& tag, const std::string& clock,
                  const std::vector<int>& tids, int buffer_kb, bool running_stamps = false);
    ~TraceInstance();
    TraceInstance(const TraceInstance&) = delete;
    TraceInstance& operator=(const TraceInstance&) = delete;

    void start();
    void stop();
    // Non-blocking read of whatever trace_pipe has; empty when nothing is pending.
    std::string read_available();
    // Writes a line into this instance's buffer (stamped with its clock).
    void mark(const std::string& text);
    const std::string& dir() const { return dir_; }
    bool running_stamps() const { return running_stamps_; }

private:
    std::string dir_;
    int pipe_fd_ = -1;
    bool running_stamps_ = false;
};

}  // namespace spinlab::load
