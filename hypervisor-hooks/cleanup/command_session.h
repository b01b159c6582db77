// One spinlab-load command's lifetime and its guarantees: nothing it changed outlives it.
//
//   - Stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are blocked and read from a signalfd, so
//     every command's wait loop wakes on them and returns through the normal cleanup path.
//   - Unless survive_parent is set, PR_SET_PDEATHSIG turns the death of our parent (the runner)
//     into a SIGTERM: same cleanup path.
//   - Everything changed is written to the ledger first; finish() (or the destructor) undoes it.
//   - A guardian process, forked before anything is changed, holds the read end of a pipe whose
//     only writer is us. When we die in any way, including SIGKILL, it reads EOF and undoes our
//     ledger and removes every spinlab-<our pid>-* cgroup and trace instance. It ignores the
//     stop signals and leaves our session, so Ctrl-C or a process-group SIGKILL reaches us, not it.
//   - Stale leftovers of dead earlier owners are removed at start.
//
// Construct the Session while the process is single-threaded (it forks).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ledger.h"

namespace spinlab::load {

struct SessionOptions {
    std::string state_dir;
    bool survive_parent = false;
    bool guardian = true;
    // Written once the command's load is in effect, removed at exit. Its first line is our pid;
    // then one `key=value` line per fact the command states about how it runs (freeze:
    // rt_priority_asked, rt_priority, rt_priority_fallback), for spinlab-run's meta.json.
    std::string ready_file;
};

enum class Wake { kDeadline, kStop, kChild };

class Session {
public:
    explicit Session(const SessionOptions& options);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    Ledger& ledger() { return *ledger_; }
    int owner() const { return owner_; }
    // Waits until the CLOCK_MONOTONIC deadline (ns; 0 = forever) or a stop signal, and, when
    // `wake_on_child`, a SIGCHLD.
    Wake wait_until(uint64_t deadline_ns, bool wake_on_child = false);
    // For poll(2) loops: readable when a signal is pending; then call consume_signals().
    int signal_fd() const { return signal_fd_; }
    Wake consume_signals();
    bool stopped() const { return stopped_; }
    const std::string& stop_reason() const { return stop_reason_; }
    // Writes the ready file (atomically: it appears complete) with these `key=value` facts.
    void mark_ready(const std::vector<std::pair<std::string, std::string>>& facts = {});
    // Undoes everything (idempotent); returns the problems met.
    std::vector<std::string> finish();
    // Call in a forked child that will not exec: closes our fds and restores signals.
    void in_forked_child() const;
    pid_t guardian_pid() const { return guardian_pid_; }

private:
    SessionOptions options_;
    int owner_;
    int signal_fd_ = -1;
    int guardian_fd_ = -1;  // write end of the guardian pipe
    pid_t guardian_pid_ = -1;
    bool stopped_ = false;
    bool finished_ = false;
    std::string stop_reason_;
    std::unique_ptr<Ledger> ledger_;
};

}  // namespace spinlab::load
