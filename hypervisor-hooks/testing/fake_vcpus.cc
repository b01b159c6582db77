// Test helper: a process that looks like QEMU to vCPU discovery. It starts N threads named
// "CPU <i>/TCG" that spin (or sleep with --idle, or with --switchy spin 1 ms and sleep 0.2 ms
// in turn: about a thousand switches a second each), prints its pid and their tids on one line
// ("pid tid0 tid1 ..."), and exits when stdin closes or after the given seconds, so it never
// outlives the test that started it.
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {
std::atomic<int> g_started{0};
std::vector<std::atomic<long>> g_tids(64);

enum class Mode { kSpin, kIdle, kSwitchy };

void spin_for(std::chrono::microseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) asm volatile("" ::: "memory");
}

void vcpu(int index, Mode mode) {
    char name[16];
    std::snprintf(name, sizeof name, "CPU %d/TCG", index);
    ::prctl(PR_SET_NAME, name, 0, 0, 0);
    g_tids[index] = ::syscall(SYS_gettid);
    ++g_started;
    for (;;) {
        if (mode == Mode::kIdle) ::usleep(100000);
        if (mode == Mode::kSwitchy) {
            spin_for(std::chrono::microseconds(1000));
            ::usleep(200);
        }
        asm volatile("" ::: "memory");
    }
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
        std::fprintf(stderr,
                     "usage: spinlab-fake-vcpus N [SECONDS] [--idle|--switchy]\n"
                     "Starts N spinning threads named 'CPU <i>/TCG'; prints 'pid tid0 ...';\n"
                     "exits when stdin closes or after SECONDS (default 60).\n"
                     "--idle: they sleep instead; --switchy: spin 1 ms, sleep 0.2 ms, again.\n\n"
                     "EXAMPLES\n  spinlab-fake-vcpus 2 10\n  spinlab-fake-vcpus 4 10 --switchy\n");
        return argc < 2 ? 2 : 0;
    }
    int n = std::atoi(argv[1]);
    double seconds = argc > 2 && argv[2][0] != '-' ? std::atof(argv[2]) : 60;
    Mode mode = Mode::kSpin;
    if (argc > 2 && std::strcmp(argv[argc - 1], "--idle") == 0) mode = Mode::kIdle;
    if (argc > 2 && std::strcmp(argv[argc - 1], "--switchy") == 0) mode = Mode::kSwitchy;
    if (n < 1 || n > 64) {
        std::fprintf(stderr, "spinlab-fake-vcpus: N must be 1..64\n");
        return 2;
    }
    ::prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0);
    for (int i = 0; i < n; ++i) std::thread(vcpu, i, mode).detach();
    while (g_started < n) ::usleep(1000);
    std::printf("%d", ::getpid());
    for (int i = 0; i < n; ++i) std::printf(" %ld", g_tids[i].load());
    std::printf("\n");
    std::fflush(stdout);
    pollfd pfd{0, POLLIN, 0};
    for (int waited = 0; waited < seconds * 10; ++waited) {
        if (::poll(&pfd, 1, 100) > 0) {
            char buf[64];
            if (::read(0, buf, sizeof buf) <= 0) break;
        }
    }
    std::_Exit(0);
}
