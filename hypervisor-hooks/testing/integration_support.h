// Helpers for the integration tests: run spinlab-load and the fake-vCPU helper as real child
// processes, find what a spinlab-load pid left behind, read CSV output.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace spinlab::load::testing {

// Skip reasons; empty when the test can run.
std::string need_root();

class ChildProcess {
public:
    // Starts `argv` (argv[0] is the path), stdout and stderr into files in a temp dir.
    explicit ChildProcess(std::vector<std::string> argv);
    ~ChildProcess();  // SIGKILLs and reaps if still running
    pid_t pid() const { return pid_; }
    // Waits up to `timeout_s`; returns the exit status (as waitpid gives it) or -1 on timeout.
    int wait(double timeout_s);
    std::string stdout_text() const;
    std::string stderr_text() const;

private:
    pid_t pid_ = -1;
    bool reaped_ = false;
    std::string out_, err_;
};

class FakeVcpus {
public:
    // Threads that spin; `idle`: that sleep; `switchy`: that spin 1 ms and sleep 0.2 ms in turn.
    FakeVcpus(int count, bool idle = false, bool switchy = false);
    ~FakeVcpus();
    int pid() const { return pid_; }
    const std::vector<int>& tids() const { return tids_; }

private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    std::vector<int> tids_;
};

// A fresh directory under /tmp, removed with its contents when the test process exits.
std::string temp_dir();
// Polls until `done()` or `timeout_s`; returns done().
bool eventually(double timeout_s, const std::function<bool()>& done);
// The deadline for what must simply happen (a ready file appears, a process or file is gone):
// a hang catcher, not a performance bar, so it costs nothing when things work. These take
// well under a second on a quiet host and a few seconds at worst with a hog on one CPU and
// the team's builds on the other (measured on the 2-core build machine); 30 s fails only on
// a hang.
inline constexpr double kEventuallyS = 30;
// Cgroups (under every cgroup mount) and tracefs instances named spinlab-<owner>-*.
std::vector<std::string> leftovers_of(int owner);
// Live processes whose parent is `parent` and whose comm is `comm`.
std::vector<int> children_named(int parent, const std::string& comm);
// CSV text -> rows of name->value.
std::vector<std::map<std::string, std::string>> parse_csv(const std::string& text);
std::string slurp(const std::string& path);

}  // namespace spinlab::load::testing
