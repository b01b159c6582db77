// hostlib/testing/child_output.h: running a program as a child process with its stdout and
// stderr in files, and waiting for it with a time limit; for the integration tests that run the
// real binaries (collector_integration_test, spinlab-load's integration_support). Header only,
// host tests only; each caller decides what a child that outlives its limit means.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace spinlab::testing {

// Starts argv (argv[0] is the program's path) with stdout into out_path and stderr into
// err_path (created or truncated); returns its pid, -1 if fork failed. A program that cannot
// be run exits with 127, as in a shell.
inline pid_t spawn_with_output(const std::vector<std::string>& argv, const std::string& out_path,
                               const std::string& err_path) {
    std::vector<char*> args;  // built before fork: the child only opens, dups and execs
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(127);
    ::execv(args[0], args.data());
    ::_exit(127);
}

// Waits up to `limit` for child `pid` to exit, polling every 10 ms. True, with its status as
// waitpid gives it in *status, once reaped; false while it still runs.
inline bool reap_within(pid_t pid, std::chrono::duration<double> limit, int* status) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (::waitpid(pid, status, WNOHANG) == pid) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace spinlab::testing
