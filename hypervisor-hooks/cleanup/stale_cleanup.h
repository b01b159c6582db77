// Finds and removes what dead spinlab-load processes left behind: ledgers in the state directory
// whose owner is dead are undone; then every cgroup directly under a cgroup mount and every
// tracefs instance named spinlab-<pid>-* whose pid is dead is thawed, emptied and removed.
// Run at the start of every spinlab-load command, by the guardian, and by `spinlab-load cleanup`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace spinlab::load {

struct CleanupReport {
    std::vector<std::string> removed;   // what was undone or removed
    std::vector<std::string> problems;  // what could not be
};

// `owner`: only that owner's leftovers, taken as dead even if the pid still answers (the
// guardian calls this as its owner exits). nullopt: every owner whose pid is dead.
CleanupReport cleanup_stale(const std::string& state_dir, std::optional<int> owner);

// The default state directory (ledgers): the run directory, spinlab::run_dir()
// (collector/run_dir.h).
std::string default_state_dir();

}  // namespace spinlab::load
