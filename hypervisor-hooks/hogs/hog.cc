#include "hog.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"
#include "hypervisor-hooks/common/id_list.h"
#include "hypervisor-hooks/common/proc_info.h"

namespace spinlab::load {

namespace {
// `ready_fd`: one byte is written there once the hog is named, pinned and reniced.
[[noreturn]] void hog_main(int cpu, uint64_t busy_ns, uint64_t period_ns, int nice, int ready_fd) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) < 0) ::_exit(3);
    if (::setpriority(PRIO_PROCESS, 0, nice) < 0) ::_exit(4);
    ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    char ok = 1;
    if (::write(ready_fd, &ok, 1) != 1) ::_exit(5);
    ::close(ready_fd);
    if (busy_ns >= period_ns) {
        // The original experiment's host load: while (true);
        for (;;) asm volatile("" ::: "memory");  // kept by the compiler: an endless busy loop
    }
    uint64_t period_start = monotonic_ns();
    for (;;) {
        while (monotonic_ns() - period_start < busy_ns) {
        }
        period_start += period_ns;
        timespec ts{static_cast<time_t>(period_start / 1000000000ull),
                    static_cast<long>(period_start % 1000000000ull)};
        while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        }
    }
}
}  // namespace

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) < 0) {
        throw LoadError(std::string("sched_getaffinity: ") + std::strerror(errno));
    }
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

uint64_t busy_ns_per_period(double duty_pct, double period_ms) {
    return static_cast<uint64_t>(std::llround(period_ms * 1e6 * duty_pct / 100.0));
}

void validate_hog(const HogConfig& c) {
    if (!(c.duty_pct > 0 && c.duty_pct <= 100)) {
        throw LoadError("--duty " + std::to_string(c.duty_pct) + " must be in (0, 100] percent");
    }
    if (!(c.period_ms >= 1 && c.period_ms <= 10000)) {
        throw LoadError("--period-ms " + std::to_string(c.period_ms) + " must be in [1, 10000]");
    }
    if (c.nice < -20 || c.nice > 19) {
        throw LoadError("--nice " + std::to_string(c.nice) + " must be in [-20, 19]");
    }
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
    std::vector<int> allowed = allowed_cpus();
    for (int cpu : c.cpus) {
        if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
            throw LoadError("--cpus: CPU " + std::to_string(cpu) + " is not one this process may use (" +
                            format_id_list(allowed) + ")");
        }
    }
}

namespace {
// An ordinary user may raise its nice level, not lower it (RLIMIT_NICE): say so before forking.
void check_nice_allowed(int nice) {
    errno = 0;
    const int inherited = ::getpriority(PRIO_PROCESS, 0);
    if (errno == 0 && nice < inherited) {
        struct rlimit lim {};
        const bool allowed = ::getrlimit(RLIMIT_NICE, &lim) == 0 &&
                             (lim.rlim_cur == RLIM_INFINITY || 20 - static_cast<long>(lim.rlim_cur) <= nice);
        if (!allowed && ::geteuid() != 0)
            throw LoadError("--nice " + std::to_string(nice) + ": this process runs at nice " +
                            std::to_string(inherited) + " and an ordinary user may not lower it (RLIMIT_NICE): ask "
                            "for --nice " + std::to_string(inherited) + " or more, or run without nice");
    }
}

// One hog per CPU, each in the ledger; each writes a byte to `ready`'s write end once set up.
std::vector<pid_t> fork_hogs(Session& session, const HogConfig& c, const std::vector<int>& cpus,
                             const int ready[2]) {
    const uint64_t period_ns = static_cast<uint64_t>(c.period_ms * 1e6);
    const uint64_t busy_ns = busy_ns_per_period(c.duty_pct, c.period_ms);
    const pid_t parent = ::getpid();
    std::vector<pid_t> hogs;
    for (int cpu : cpus) {
        std::fflush(nullptr);
        pid_t pid = ::fork();
        if (pid < 0) throw LoadError(std::string("cannot fork a hog: ") + std::strerror(errno));
        if (pid == 0) {
            session.in_forked_child();
            ::prctl(PR_SET_NAME, "spinlab-hog", 0, 0, 0);
            ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            if (::getppid() != parent) ::_exit(0);  // parent died before prctl took effect
            ::close(ready[0]);
            hog_main(cpu, busy_ns, period_ns, c.nice, ready[1]);
        }
        hogs.push_back(pid);
        // Recorded after the fork (the pid is not known before); a crash in between leaves a
        // hog that PR_SET_PDEATHSIG still kills.
        session.ledger().record({LedgerEntry::Kind::kProcess, "", "", pid,
                                 process_start_time(pid).value_or(0)});
    }
    return hogs;
}

// Ready means every hog is set up: each writes one byte; a hog that failed closes its end
// without writing, and once all have, read() sees EOF. Closes both ends.
void wait_for_hogs(const int ready[2], size_t hogs) {
    ::close(ready[1]);
    size_t confirmed = 0;
    for (char byte; confirmed < hogs;) {
        ssize_t n = ::read(ready[0], &byte, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        ++confirmed;
    }
    ::close(ready[0]);
    if (confirmed < hogs) {
        throw LoadError("only " + std::to_string(confirmed) + " of " + std::to_string(hogs) +
                        " hogs could be pinned and reniced (--cpus, --nice)");
    }
}

// Until the end (0: none) or a stop: 0; 1 as soon as a hog exits.
int watch_hogs(Session& session, const std::vector<pid_t>& hogs, uint64_t end) {
    for (;;) {
        Wake w = session.wait_until(end, true);
        if (w != Wake::kChild) return 0;
        // A hog should never exit by itself; one that did failed to pin or renice.
        int status = 0;
        bool hog_died = false;
        for (pid_t pid : hogs) {
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                std::fprintf(stderr, "hog: process %d exited unexpectedly (status %d)\n", pid, status);
                hog_died = true;
            }
        }
        if (hog_died) return 1;
    }
}
}  // namespace

int run_hog(Session& session, const HogConfig& c) {
    validate_hog(c);
    check_nice_allowed(c.nice);
    std::vector<int> cpus = c.cpus.empty() ? allowed_cpus() : c.cpus;
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) < 0) throw LoadError(std::string("pipe: ") + std::strerror(errno));
    const std::vector<pid_t> hogs = fork_hogs(session, c, cpus, ready);
    wait_for_hogs(ready, hogs.size());
    std::fprintf(stderr, "hog: %zu process(es) on CPU(s) %s, duty %.0f%% of %.0f ms, nice %d\n",
                 hogs.size(), format_id_list(cpus).c_str(), c.duty_pct, c.period_ms, c.nice);
    session.mark_ready();
    const uint64_t end = c.duration_s > 0 ? monotonic_ns() + static_cast<uint64_t>(c.duration_s * 1e9) : 0;
    const int exit_code = watch_hogs(session, hogs, end);
    for (pid_t pid : hogs) ::kill(pid, SIGKILL);
    for (pid_t pid : hogs) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    std::fprintf(stderr, "hog: stopped%s%s\n", session.stopped() ? " by " : "",
                 session.stop_reason().c_str());
    return exit_code;
}

}  // namespace spinlab::load
