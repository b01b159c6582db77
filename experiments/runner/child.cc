// experiments/runner/child.cc: see child.h.
#include "child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace spinlab::run {

Child::Child(std::vector<std::string> argv, const std::string& log_path) {
    if (argv.empty()) throw std::runtime_error("no program to start");
    name_ = argv[0].substr(argv[0].rfind('/') + 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int log_fd = -1;
    if (!log_path.empty()) {
        log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0)
            throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
    }
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) {
        int e = errno;
        close(err_pipe[0]);
        close(err_pipe[1]);
        if (log_fd >= 0) close(log_fd);
        throw std::runtime_error("fork: " + std::string(std::strerror(e)));
    }
    if (pid_ == 0) {
        // Only async-signal-safe calls from here to exec.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);  // the runner died before the request took effect
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        if (log_fd >= 0) {
            dup2(log_fd, 1);
            dup2(log_fd, 2);
        }
        execv(args[0], args.data());
        int e = errno;
        ssize_t ignored = write(err_pipe[1], &e, sizeof e);
        (void)ignored;
        _exit(127);
    }
    setpgid(pid_, pid_);  // also here: no race with a signal to the group right after fork
    close(err_pipe[1]);
    if (log_fd >= 0) close(log_fd);
    int e = 0;
    ssize_t n;
    do {
        n = read(err_pipe[0], &e, sizeof e);
    } while (n < 0 && errno == EINTR);
    close(err_pipe[0]);
    if (n == sizeof e) {
        int st;
        waitpid(pid_, &st, 0);
        pid_ = -1;
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(e));
    }
}

Child::~Child() {
    if (pid_ > 0 && !status_) stop();
}

std::optional<int> Child::poll() {
    if (status_ || pid_ <= 0) return status_;
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) status_ = st;
    return status_;
}

int Child::stop(std::chrono::milliseconds grace) {
    if (poll()) return *status_;
    kill(-pid_, SIGTERM);
    kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
        if (poll()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!status_) {
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        int st = 0;
        while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
        status_ = st;
    }
    return *status_;
}

std::string Child::describe(int st) {
    if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) {
        const char* n = sigabbrev_np(WTERMSIG(st));
        return std::string("was killed by SIG") + (n ? n : std::to_string(WTERMSIG(st)).c_str());
    }
    return "ended (status " + std::to_string(st) + ")";
}

bool wait_for_file(const std::string& path, Child& child, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    struct stat st;
    while (std::chrono::steady_clock::now() < deadline) {
        if (stat(path.c_str(), &st) == 0) return true;
        if (!child.running()) return stat(path.c_str(), &st) == 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

std::string run_to_end(const std::vector<std::string>& argv, const std::string& log_path,
                       std::chrono::milliseconds timeout) {
    std::string what = argv.empty() ? "" : argv[0].substr(argv[0].rfind('/') + 1);
    if (argv.size() > 1) what += " " + argv[1];
    try {
        Child c(argv, log_path);
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (c.running()) {
            if (std::chrono::steady_clock::now() >= until) {
                c.stop(std::chrono::seconds(2));
                return what + " gave no answer within " + std::to_string(timeout.count() / 1000) + " s";
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const int st = *c.poll();
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) return what + " " + Child::describe(st);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace spinlab::run
