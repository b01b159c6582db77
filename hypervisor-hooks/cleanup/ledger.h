// The ledger: everything one spinlab-load process changed on the host, in the order it did it.
// It lives in memory and, line by line as it happens, in <state dir>/spinlab-<pid>-ledger, so
// the owner on exit, its guardian after the owner was SIGKILLed, or a later run / `cleanup`
// can undo it all:
//
//   1. kill the processes it started (hogs), if still the same processes (start time matches);
//   2. thaw every cgroup it created (frozen threads must never stay frozen);
//   3. in reverse order: move threads back where they came from, remove the cgroups (moving any
//      straggler to the parent first), disable and remove the tracefs instances.
//
// Undo is idempotent: entries whose object is already gone are skipped without error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spinlab::load {

struct LedgerEntry {
    enum class Kind { kCgroup, kMove, kProcess, kInstance };
    Kind kind;
    std::string path;     // kCgroup, kInstance: the directory; kMove: the cgroup moved into
    std::string file;     // kMove: the origin's tasks/cgroup.procs file to move back into
    long id = 0;          // kMove: tid or pid; kProcess: pid
    uint64_t start = 0;   // kProcess: /proc start time
};

// One line, tab separated ("cgroup\t/sys/fs/cgroup/freezer/spinlab-1-x").
std::string format_ledger_entry(const LedgerEntry& e);
// Inverse of format_ledger_entry; throws LoadError naming the line when it is malformed.
LedgerEntry parse_ledger_entry(const std::string& line);
std::vector<LedgerEntry> parse_ledger(const std::string& text);

// Thaws a cgroup (v1 freezer.state or v2 cgroup.freeze, whichever it has); no-op otherwise.
void thaw_cgroup(const std::string& dir);
// Thaws, moves every task left in `dir` (and its children) to the parent, removes them.
// Returns an empty string on success, else what failed.
std::string evacuate_and_remove_cgroup(const std::string& dir);
// Stops and removes a tracefs instance directory.
std::string remove_trace_instance(const std::string& dir);
// Applies the undo rules above; returns the problems met (empty when everything is clean).
std::vector<std::string> undo_ledger(const std::vector<LedgerEntry>& entries);

class Ledger {
public:
    // Creates <state_dir>/spinlab-<owner>-ledger; state_dir is created if missing.
    Ledger(std::string state_dir, int owner_pid);
    ~Ledger();
    Ledger(const Ledger&) = delete;
    Ledger& operator=(const Ledger&) = delete;

    // Appends to memory and to the file before the caller makes the change it describes
    // (so a crash in between leaves an entry whose undo is a harmless no-op).
    void record(const LedgerEntry& e);
    // Undoes everything recorded so far and deletes the file; safe to call more than once.
    std::vector<std::string> undo_all();
    const std::string& file() const { return file_; }
    static std::string file_for(const std::string& state_dir, int owner_pid);

private:
    std::string file_;
    int fd_ = -1;
    std::vector<LedgerEntry> entries_;
};

}  // namespace spinlab::load
