#include "command_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "stale_cleanup.h"

namespace spinlab::load {

namespace {
sigset_t stop_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, s);
    return set;
}

void reset_signals_in_child() {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE}) ::signal(s, SIG_DFL);
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
}

// The guardian: waits for EOF on `read_fd` (the owner is gone), then removes the owner's
// leftovers. Never returns.
[[noreturn]] void run_guardian(int read_fd, int owner, const std::string& state_dir) {
    reset_signals_in_child();
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(s, SIG_IGN);
    ::setsid();
    ::prctl(PR_SET_NAME, "spinlab-guard", 0, 0, 0);
    for (const std::string& name : list_directory("/proc/self/fd")) {
        int fd = std::atoi(name.c_str());
        if (fd > 2 && fd != read_fd) ::close(fd);
    }
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        if (devnull > 2) ::close(devnull);
    }
    char byte;
    for (;;) {  // nobody ever writes: only EOF (owner gone) or an error ends the wait
        ssize_t n = ::read(read_fd, &byte, 1);
        if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    CleanupReport report = cleanup_stale(state_dir, owner);
    for (const std::string& p : report.problems) {
        std::fprintf(stderr, "spinlab-load guardian: %s\n", p.c_str());
    }
    ::_exit(report.problems.empty() ? 0 : 1);
}
}  // namespace

Session::Session(const SessionOptions& options) : options_(options), owner_(::getpid()) {
    if (options_.state_dir.empty()) options_.state_dir = default_state_dir();
    sigset_t set = stop_signal_set();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) < 0) {
        throw LoadError(std::string("cannot block stop signals: ") + std::strerror(errno));
    }
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) throw LoadError(std::string("signalfd: ") + std::strerror(errno));
    if (!options_.survive_parent) {
        pid_t parent = ::getppid();
        ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        // The parent may have died before prctl; then no signal would ever come.
        if (::getppid() != parent) {
            stopped_ = true;
            stop_reason_ = "parent exited";
        }
    }
    CleanupReport stale = cleanup_stale(options_.state_dir, std::nullopt);
    for (const std::string& r : stale.removed) {
        std::fprintf(stderr, "spinlab-load: removed stale %s\n", r.c_str());
    }
    ledger_ = std::make_unique<Ledger>(options_.state_dir, owner_);
    if (options_.guardian) {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) < 0) throw LoadError(std::string("pipe: ") + std::strerror(errno));
        std::fflush(nullptr);
        pid_t pid = ::fork();
        if (pid < 0) throw LoadError(std::string("cannot fork the guardian: ") + std::strerror(errno));
        if (pid == 0) {
            ::close(fds[1]);
            run_guardian(fds[0], owner_, options_.state_dir);
        }
        ::close(fds[0]);
        guardian_fd_ = fds[1];
        guardian_pid_ = pid;
    }
}

Session::~Session() {
    std::vector<std::string> problems = finish();
    for (const std::string& p : problems) std::fprintf(stderr, "spinlab-load: %s\n", p.c_str());
}

Wake Session::consume_signals() {
    Wake wake = Wake::kDeadline;
    signalfd_siginfo info{};
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo == SIGCHLD) {
            if (wake != Wake::kStop) wake = Wake::kChild;
            continue;
        }
        stopped_ = true;
        stop_reason_ = strsignal(static_cast<int>(info.ssi_signo));
        wake = Wake::kStop;
    }
    return wake;
}

Wake Session::wait_until(uint64_t deadline_ns, bool wake_on_child) {
    for (;;) {
        if (stopped_) return Wake::kStop;
        timespec ts{};
        const timespec* tsp = nullptr;
        if (deadline_ns) {
            uint64_t now = monotonic_ns();
            if (now >= deadline_ns) return Wake::kDeadline;
            uint64_t left = deadline_ns - now;
            ts.tv_sec = static_cast<time_t>(left / 1000000000ull);
            ts.tv_nsec = static_cast<long>(left % 1000000000ull);
            tsp = &ts;
        }
        pollfd pfd{signal_fd_, POLLIN, 0};
        int n = ::ppoll(&pfd, 1, tsp, nullptr);
        if (n < 0 && errno != EINTR) throw LoadError(std::string("ppoll: ") + std::strerror(errno));
        if (n > 0) {
            Wake w = consume_signals();
            if (w == Wake::kStop || (w == Wake::kChild && wake_on_child)) return w;
        }
    }
}

void Session::mark_ready(const std::vector<std::pair<std::string, std::string>>& facts) {
    if (options_.ready_file.empty()) return;
    const std::string tmp = options_.ready_file + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw LoadError("--ready-file " + options_.ready_file + ": " + std::strerror(errno));
    std::string text = std::to_string(owner_) + "\n";
    for (const auto& [key, value] : facts) {
        if (key.find_first_of("=\n") != std::string::npos || value.find('\n') != std::string::npos)
            throw LoadError("ready-file fact '" + key + "' must be one line with no '=' in its key");
        text += key + "=" + value + "\n";
    }
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), options_.ready_file.c_str()) < 0) {
        throw LoadError("--ready-file " + options_.ready_file + ": " + std::strerror(errno));
    }
}

std::vector<std::string> Session::finish() {
    if (finished_) return {};
    finished_ = true;
    std::vector<std::string> problems = ledger_ ? ledger_->undo_all() : std::vector<std::string>{};
    if (!options_.ready_file.empty()) ::unlink(options_.ready_file.c_str());
    if (guardian_fd_ >= 0) {
        ::close(guardian_fd_);  // the guardian wakes, finds nothing left, exits
        guardian_fd_ = -1;
        int status = 0;
        while (::waitpid(guardian_pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (signal_fd_ >= 0) {
        ::close(signal_fd_);
        signal_fd_ = -1;
    }
    return problems;
}

void Session::in_forked_child() const {
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (guardian_fd_ >= 0) ::close(guardian_fd_);
    reset_signals_in_child();
}

}  // namespace spinlab::load
