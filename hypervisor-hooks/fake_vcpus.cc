// Test helper: a process that looks like QEMU to vCPU discovery. It starts N threads named
// "CPU <i>/TCG" that spin (or sleep with --idle), prints its pid and their tids on one line
// ("pid tid0 tid1 ..."), and exits when stdin closes or after the given seconds, so it never
// outlives the test that started it.
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {
std::atomic<int> g_started{0};
std::vector<std::atomic<long>> g_tids(64);

void vcpu(int index, bool idle) {
    char name[16];
    std::snprintf(name, sizeof name, "CPU %d/TCG", index);
    ::prctl(PR_SET_NAME, name, 0, 0, 0);
    g_tids[index] = ::syscall(SYS_gettid);
    ++g_started;
    for (;;) {
        if (idle) ::usleep(100000);
        asm volatile("" ::: "memory");
    }
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
        std::fprintf(stderr,
                     "usage: spinlab-fake-vcpus N [SECONDS] [--idle]\n"
                     "Starts N spinning threads named 'CPU <i>/TCG'; prints 'pid tid0 ...';\n"
                     "exits when stdin closes or after SECONDS (default 60).\n\n"
                     "EXAMPLES\n  spinlab-fake-vcpus 2 10\n");
        return argc < 2 ? 2 : 0;
    }
    int n = std::atoi(argv[1]);
    double seconds = argc > 2 && argv[2][0] != '-' ? std::atof(argv[2]) : 60;
    bool idle = argc > 2 && std::strcmp(argv[argc - 1], "--idle") == 0;
    if (n < 1 || n > 64) {
        std::fprintf(stderr, "spinlab-fake-vcpus: N must be 1..64\n");
        return 2;
    }
    ::prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0);
    for (int i = 0; i < n; ++i) std::thread(vcpu, i, idle).detach();
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
