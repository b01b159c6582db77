// experiments/runner/child.h: the processes the runner starts (spinlab-vm run, spinlab-load),
// and how they are made to end with it.
//
// Each child runs in a process group of its own (a Ctrl-C on the terminal reaches only the
// runner, which then stops its children in order) and asks the kernel for SIGTERM when the
// runner dies (PR_SET_PDEATHSIG, set between fork and exec): a SIGKILLed runner still has its
// children clean up (spinlab-vm run stops QEMU and removes the VM's state, spinlab-load undoes
// its cgroups and kills its hogs). A Child that is destroyed while its process still runs sends
// SIGTERM, waits, then SIGKILLs the group.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace spinlab::run {

class Child {
public:
    // Starts argv[0] (a path) with the arguments; stdout and stderr go to `log_path` (appended)
    // or are inherited when it is empty. Throws std::runtime_error when fork or exec fails (exec
    // failure is reported through a close-on-exec pipe, so a missing binary is an error here).
    Child(std::vector<std::string> argv, const std::string& log_path);
    ~Child();
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& name() const { return name_; }

    // Non-blocking: the exit status (as waitpid's) once it ended.
    std::optional<int> poll();
    bool running() { return !poll().has_value(); }

    // SIGTERM to the group, wait up to `grace`, then SIGKILL and reap. Returns the wait status.
    int stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

    // "exited with status 3" / "was killed by SIGKILL".
    static std::string describe(int wait_status);

private:
    std::string name_;
    pid_t pid_ = -1;
    std::optional<int> status_;
};

// Blocks until `path` exists, the child ends, or the timeout passes. Returns whether it exists.
bool wait_for_file(const std::string& path, Child& child, std::chrono::milliseconds timeout);

// Runs argv to its end (output appended to `log_path`), stopping it after `timeout`. Returns ""
// when it exited 0, else what happened, naming argv[0]'s file name and argv[1]: "spinlab-vm stats
// exited with status 3" or "... gave no answer within 15 s".
std::string run_to_end(const std::vector<std::string>& argv, const std::string& log_path,
                       std::chrono::milliseconds timeout);

}  // namespace spinlab::run
