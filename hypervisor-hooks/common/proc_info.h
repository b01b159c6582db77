// What /proc says about a process or thread: alive or not, its start time (to tell a pid from
// a later process that reused it), its name, its threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spinlab::load {

bool process_alive(int pid);
// Field 22 of /proc/<pid>/stat (clock ticks since boot), nullopt if the process is gone.
std::optional<uint64_t> process_start_time(int pid);
// Start time parsed from a /proc/<pid>/stat line; the comm field may contain spaces and ')'.
std::optional<uint64_t> parse_stat_start_time(const std::string& stat_line);
// The thread group (process) id of a thread, from /proc/<tid>/status; nullopt if gone.
std::optional<int> thread_group_of(int tid);
std::vector<int> threads_of(int pid);
std::string thread_name(int pid, int tid);
// Parses a whitespace-separated list of ids (cgroup.procs, tasks, cgroup.threads contents).
std::vector<int> parse_pid_lines(const std::string& text);

}  // namespace spinlab::load
