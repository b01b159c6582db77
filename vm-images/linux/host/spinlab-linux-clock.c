// spinlab-linux-clock: the host's half of the Linux guest's clock (vm-images/linux/README.md,
// "The clock").
//
// Connects to the Unix socket of the guest's virtio-serial port org.spinlab.clock (QEMU listens
// on it: -chardev socket,server=on,wait=off), and every --period-ms writes an 8-byte ping (a
// sequence number, little-endian) and reads the agent's 16-byte answer <the ping, u64 guest
// rdtsc>. The host TSC is read (lfence; rdtsc; lfence) just before the write and just after the
// answer, so the guest's TSC was read inside [host_before, host_after]. One ping is outstanding
// at a time: a slow answer only widens its own bracket. Each point is written to --out as a CSV
// row host_before,host_after,guest as soon as it is answered.
//
// --stats FILE: at exit, {"pings", "answered", "host_tsc_hz", "seconds", "status"} as JSON (the
// host TSC's rate from CLOCK_MONOTONIC over the helper's life).
//
// Stops on SIGTERM or SIGINT (exit 0), when QEMU closes the socket (EOF, exit 0), and when its
// parent dies (PR_SET_PDEATHSIG). Exit 1: usage or setup; 3: an answer that is not the ping's.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static uint64_t host_tsc(void) {
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void usage(void) {
    fprintf(stderr, "usage: spinlab-linux-clock --socket PATH --out FILE [--period-ms MS] "
                    "[--connect-timeout-s S] [--stats FILE]\n");
    exit(1);
}

// 1: n bytes read; 0: EOF; -1: stopped by a signal or an error (errno).
static int read_full(int fd, uint8_t *p, size_t n) {
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, 100);
        if (stop) return -1;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) continue;
        ssize_t k = read(fd, p, n);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k < 0) return -1;
        if (k == 0) return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

int main(int argc, char **argv) {
    const char *sock = NULL, *out = NULL, *stats = NULL;
    double period_ms = 10, connect_s = 30;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--socket")) sock = argv[++i];
        else if (!strcmp(argv[i], "--out")) out = argv[++i];
        else if (!strcmp(argv[i], "--period-ms")) period_ms = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--connect-timeout-s")) connect_s = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--stats")) stats = argv[++i];
        else usage();
    }
    if (!sock || !out || !(period_ms > 0) || !(connect_s > 0)) usage();
    uint64_t mono0 = mono_ns(), tsc0 = host_tsc();
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return 0;
    struct sigaction sa = {.sa_handler = on_signal};   // no SA_RESTART: a signal ends a wait
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof a.sun_path) { fprintf(stderr, "spinlab-linux-clock: socket path too long\n"); return 1; }
    strcpy(a.sun_path, sock);
    int fd = -1;
    uint64_t deadline = mono_ns() + (uint64_t)(connect_s * 1e9);
    while (!stop) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) { perror("spinlab-linux-clock: socket"); return 1; }
        if (!connect(fd, (struct sockaddr *)&a, sizeof a)) break;
        int e = errno;
        close(fd);
        fd = -1;
        if ((e != ENOENT && e != ECONNREFUSED) || mono_ns() > deadline) {
            fprintf(stderr, "spinlab-linux-clock: cannot connect to %s: %s\n", sock, strerror(e));
            return 1;
        }
        usleep(10000);
    }
    if (fd < 0) return 0;
    FILE *f = fopen(out, "w");
    if (!f) { fprintf(stderr, "spinlab-linux-clock: cannot write %s: %s\n", out, strerror(errno)); return 1; }
    setvbuf(f, NULL, _IOLBF, 0);
    fprintf(f, "host_before,host_after,guest\n");

    uint64_t seq = 0, answered = 0, period = (uint64_t)(period_ms * 1e6);
    uint64_t next = mono_ns();
    int rc = 0;
    while (!stop) {
        uint8_t ping[8], ans[16];
        seq++;
        for (int i = 0; i < 8; i++) ping[i] = (uint8_t)(seq >> (8 * i));
        uint64_t before = host_tsc();
        if (write(fd, ping, sizeof ping) != (ssize_t)sizeof ping) {
            if (errno != EINTR) fprintf(stderr, "spinlab-linux-clock: write: %s\n", strerror(errno));
            break;
        }
        int r = read_full(fd, ans, sizeof ans);
        uint64_t after = host_tsc();
        if (r <= 0) break;   // stopped, EOF (QEMU closed the socket) or an error
        uint64_t echo = 0, guest = 0;
        for (int i = 0; i < 8; i++) {
            echo |= (uint64_t)ans[i] << (8 * i);
            guest |= (uint64_t)ans[8 + i] << (8 * i);
        }
        if (echo != seq) {
            fprintf(stderr, "spinlab-linux-clock: ping %llu answered as %llu\n",
                    (unsigned long long)seq, (unsigned long long)echo);
            rc = 3;
            break;
        }
        fprintf(f, "%llu,%llu,%llu\n", (unsigned long long)before, (unsigned long long)after,
                (unsigned long long)guest);
        answered++;
        next += period;
        uint64_t now = mono_ns();
        if (next < now) next = now;   // a slow answer: no burst of pings to catch up
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
    }
    fclose(f);
    close(fd);
    fprintf(stderr, "spinlab-linux-clock: %llu pings, %llu answered\n", (unsigned long long)seq,
            (unsigned long long)answered);
    uint64_t mono1 = mono_ns(), tsc1 = host_tsc();
    if (stats) {
        FILE *j = fopen(stats, "w");
        if (j) {
            double secs = (double)(mono1 - mono0) / 1e9;
            fprintf(j, "{\"pings\": %llu, \"answered\": %llu, \"host_tsc_hz\": %.0f, "
                       "\"seconds\": %.6f, \"status\": %d}\n",
                    (unsigned long long)seq, (unsigned long long)answered,
                    secs > 0 ? (double)(tsc1 - tsc0) / secs : 0.0, secs, rc);
            fclose(j);
        }
    }
    return rc;
}
