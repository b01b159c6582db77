// spinlab-agent: records every spinlock slow-path wait of a Linux guest and sends it to the host.
//
// Runs from the initramfs's /init (vm-images/linux/guest/init), statically linked (gcc -static
// -O2). Steps:
//   1. reads its settings from the kernel command line (spinlab.seconds, spinlab.workload,
//      spinlab.trace, spinlab.bufkb, spinlab.workers, spinlab.hackbench, spinlab.stream, ...);
//   2. finds the virtio-serial port named org.spinlab.waits and sends a META frame (kernel,
//      CPUs, the hypervisor bit, the kernel's PV-spinlock line, the probed symbol);
//   3. chooses the slow path the kernel uses (__pv_queued_spin_lock_slowpath when the kernel
//      said "PV spinlocks enabled", else native_queued_spin_lock_slowpath, in which the
//      test-and-set virt_spin_lock() fallback also runs), checks it is in /proc/kallsyms and
//      not in the kprobe blacklist, and adds a kprobe at its entry (lock=%di) and a kretprobe
//      at its return through tracefs, with trace_clock x86-tsc and overwrite off;
//   4. runs the workload for the requested seconds, stops tracing, reads each CPU's trace,
//      pairs begin and end with a per-CPU stack (a wait interrupted by another wait nests), and
//      sends the waits (WAITS frames), each CPU's counts and ring-buffer losses (CPU frames)
//      and a TRAILER frame with totals, the window and the probes' hit and miss counts;
//   5. waits for the host's one-byte acknowledgement of the trailer, so that /init powers off
//      only after the host has everything.
// The stream format is described in vm-images/linux/README.md; the host's reader is
// vm-images/linux/spinlab_linux/records.py. spinlab.workload=probecost instead times a tight
// loop of getppid() with and without the same kprobe/kretprobe pair (what a probe adds).
// spinlab.workload=gt loads the ground-truth module (guest/gt/spinlab_gt.c), whose own records
// of who held its lock and when go to the host in HOLDS frames. With spinlab.clock=1 a thread
// answers the host's pings on the port org.spinlab.clock with the guest's TSC (the clock that
// maps guest TSC to host TSC); with spinlab.go=1 the workload starts only when the host sends
// a go byte (once its own recorders are running). With spinlab.region=1 the agent is also a
// spinlab guest for the host's tools: it lays spinlab's shared region out in the ivshmem
// device (guest/region.cc), publishes its TSC there every 10 ms as spinlab's kernel does, and
// reads each CPU's events live (tracefs per_cpu/cpuN/trace_pipe, a thread per CPU) so that
// every wait lands in that CPU's lock class 0 as it ends, and (when the host gives the port
// org.spinlab.control) answers spinlab's control channel with the kernel's own server and
// handler (guest/channel.cc): spinlab-collect query, watch, record, info and reset read a Linux
// guest's slow-path waits while it runs. The stream is the same. Over that channel it also
// serves spinlab's trace sessions of the long-wait group (guest/trace.cc, the kernel's locktrace
// writer): each CPU's reader thread is that CPU's writer and writes every wait of 2^20 cycles or
// more that ends inside the session as a TraceSpinlockEvent (kTraceSpinWaitOnly), so that
// spinlab-collect trace and spinlab-run's trace recorder record a Linux guest's long waits.
// spinlab.stream=0 (with spinlab.region=1 and spinlab.trace=1: spinlab-run's guest, booted by
// spinlab-vm with the region and the control port only) opens no waits port and sends no frame;
// spinlab.seconds=0 (only then) runs the workload until the VM is stopped. Errors still go to the
// console (ttyS0), which the host keeps.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "channel.h"
#include "region.h"
#include "trace.h"

#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS "/sys/kernel/debug"
#define PORT_NAME "org.spinlab.waits"
#define CLOCK_PORT_NAME "org.spinlab.clock"
#define CONTROL_PORT_NAME "org.spinlab.control"
#define GT_MODULE_PATH "/lib/spinlab/spinlab_gt.ko"
#define GT_DEBUGFS DEBUGFS "/spinlab_gt"
#define HACKBENCH "/usr/bin/hackbench"

// ---- the stream format (README.md "Stream format") ----
#define FORMAT_VERSION 1
enum { F_META = 1, F_WAITS = 2, F_CPU = 3, F_TRAILER = 4, F_ERROR = 5, F_HOLDS = 6 };
#define HDR_SIZE 20
#define WAITS_PER_FRAME 1024
#define ACK_BYTE 'A'
#define GO_BYTE 'G'
#define HOLDS_PER_FRAME 1024

// HOLDS: a 16-byte head <u64 lock, u32 index (holds sent before this frame), u32 count>, then
// count records as the module keeps them.
struct hold_rec {      // 24 bytes, little-endian, no padding
    uint32_t cpu;
    uint32_t flags;    // bit 0: the holder thread's hold (on holder_cpu)
    uint64_t acquire;  // x86-tsc just after spin_lock returned
    uint64_t release;  // x86-tsc just before spin_unlock
};
_Static_assert(sizeof(struct hold_rec) == 24, "hold record layout");

struct wait_rec {      // 32 bytes, little-endian, no padding
    uint32_t cpu;
    uint16_t depth;    // 0: outermost; 1: began while another wait was open on this CPU; ...
    uint16_t flags;    // reserved, 0
    uint64_t lock;     // the qspinlock's address (%di at entry)
    uint64_t start;    // x86-tsc at the entry probe
    uint64_t end;      // x86-tsc at the return probe
};
_Static_assert(sizeof(struct wait_rec) == 32, "wait record layout");

static uint32_t crc_table[256];
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}
static uint32_t crc_update(uint32_t crc, const void *p, size_t n) {
    const uint8_t *b = p;
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static int out_fd = -1;
static int ncpus;          // online CPUs
static uint32_t out_seq;   // frames sent so far

static void console(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "spinlab-agent: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = v >> (8 * i); }

// One frame: magic "SLWF", version, type, sequence number, payload length, CRC-32 of the
// first 16 header bytes and the payload.
static int emit(uint16_t type, const void *payload, uint32_t len) {
    if (out_fd < 0) return -1;
    uint8_t h[HDR_SIZE];
    memcpy(h, "SLWF", 4);
    put16(h + 4, FORMAT_VERSION);
    put16(h + 6, type);
    put32(h + 8, out_seq);
    put32(h + 12, len);
    uint32_t crc = crc_update(0, h, 16);
    crc = crc_update(crc, payload, len);
    put32(h + 16, crc);
    if (write_all(out_fd, h, HDR_SIZE) || write_all(out_fd, payload, len)) {
        console("writing to the port failed: %s", strerror(errno));
        return -1;
    }
    out_seq++;
    return 0;
}

// ---- a small JSON writer ----
struct js { char *buf; size_t len, cap; int need_comma; };
static void js_raw(struct js *j, const char *s, size_t n) {
    if (j->len + n + 1 > j->cap) {
        j->cap = (j->len + n + 1) * 2;
        j->buf = realloc(j->buf, j->cap);
        if (!j->buf) { console("out of memory"); exit(1); }
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}
static void js_str(struct js *j, const char *s) {
    js_raw(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8];
        if (*p == '"' || *p == '\\') { e[0] = '\\'; e[1] = *p; js_raw(j, e, 2); }
        else if (*p < 0x20 || *p >= 0x7f) { snprintf(e, sizeof e, "\\u%04x", *p); js_raw(j, e, 6); }
        else js_raw(j, (const char *)p, 1);
    }
    js_raw(j, "\"", 1);
}
static void js_key(struct js *j, const char *k) {
    if (j->need_comma) js_raw(j, ",", 1);
    js_str(j, k);
    js_raw(j, ":", 1);
    j->need_comma = 1;
}
static void js_open(struct js *j, const char *k) {   // k NULL: a top-level or array member
    if (k) js_key(j, k);
    else if (j->need_comma) js_raw(j, ",", 1);
    js_raw(j, "{", 1);
    j->need_comma = 0;
}
static void js_close(struct js *j) { js_raw(j, "}", 1); j->need_comma = 1; }
static void js_u64(struct js *j, const char *k, uint64_t v) {
    char b[32];
    js_key(j, k);
    js_raw(j, b, (size_t)snprintf(b, sizeof b, "%llu", (unsigned long long)v));
}
static void js_i64(struct js *j, const char *k, int64_t v) {
    char b[32];
    js_key(j, k);
    js_raw(j, b, (size_t)snprintf(b, sizeof b, "%lld", (long long)v));
}
static void js_f(struct js *j, const char *k, double v) {
    char b[48];
    js_key(j, k);
    js_raw(j, b, (size_t)snprintf(b, sizeof b, "%.6f", v));
}
static void js_s(struct js *j, const char *k, const char *v) { js_key(j, k); js_str(j, v); }
static void js_b(struct js *j, const char *k, int v) { js_key(j, k); js_raw(j, v ? "true" : "false", v ? 4 : 5); }
static void js_emit(struct js *j, uint16_t type) { emit(type, j->buf, (uint32_t)j->len); free(j->buf); *j = (struct js){0}; }

// ---- failure: tell the host (ERROR frame) and the console, then stop ----
static void fail(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    console("error: %s", msg);
    emit(F_ERROR, msg, (uint32_t)strlen(msg));
    exit(1);
}

// ---- files ----
static int write_file(const char *path, const char *s, int append) {
    int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
    if (fd < 0) return -errno;
    int r = write_all(fd, s, strlen(s)) ? -errno : 0;
    if (close(fd) && !r) r = -errno;
    return r;
}
static void must_write(const char *path, const char *s, int append) {
    int r = write_file(path, s, append);
    if (r) fail("writing '%s' to %s: %s", s, path, strerror(-r));
}
static char *read_small(const char *path, char *buf, size_t n) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    ssize_t r = read(fd, buf, n - 1);
    close(fd);
    if (r < 0) return NULL;
    buf[r] = 0;
    return buf;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

// ---- settings from /proc/cmdline ----
// probecost's default target: getppid() calls __task_pid_nr_ns (task_tgid_vnr), a traceable
// function, so its kprobe rides on ftrace as the slow path's does ([FTRACE]), where
// __x64_sys_getppid's would be an int3 probe.
#define COST_SYMBOL "__task_pid_nr_ns"
struct settings {
    double seconds;
    char workload[32];
    int trace;
    long bufkb;
    int workers;            // forkexec processes; 0: two per CPU
    int hb_groups, hb_loops; // hackbench -g and -l
    long cost_calls;        // probecost: getppid calls per batch
    int cost_rounds;
    char cost_symbol[64];   // probecost: the function probed
    int dump_lines;         // copy each CPU's first lines of trace text to the console
    int ab_phases;          // >0: the workload runs in this many phases, probes off and on in turn
    int clock;              // answer the host's clock pings on org.spinlab.clock
    int go;                 // wait for the host's go byte before the workload
    int gt_holder;          // gt: holder_cpu, hold_us, gap_us, waiter_gap_us (-1: default)
    long gt_hold_us, gt_gap_us, gt_waiter_gap_us;
    int region;             // spinlab's shared region in the ivshmem device, waits read live
    int stream;             // 0: no waits port, no frames (spinlab-run's region-only guest)
    long tsc_spacing;       // tscread: ALU iterations between two TSC reads on each CPU
};
static struct settings S = {5.0, "hackbench", 1, 8192, 0, 2, 20, 20000, 5, COST_SYMBOL, 0, 0,
                            0, 0, 1, 2000, 100, -1, 0, 1, 1000};
static char cmdline[4096];

static void read_settings(void) {
    if (!read_small("/proc/cmdline", cmdline, sizeof cmdline)) fail("cannot read /proc/cmdline");
    char *nl = strchr(cmdline, '\n');
    if (nl) *nl = 0;
    char copy[sizeof cmdline];
    strcpy(copy, cmdline);
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
        if (strncmp(tok, "spinlab.", 8)) continue;
        char *eq = strchr(tok, '=');
        if (!eq) fail("kernel parameter %s has no value", tok);
        *eq = 0;
        const char *k = tok + 8, *v = eq + 1;
        char *end;
        if (!strcmp(k, "seconds")) {
            S.seconds = strtod(v, &end);
            if (*end || S.seconds < 0 || S.seconds > 86400)
                fail("spinlab.seconds=%s: not a duration in seconds (0: until the VM is stopped)", v);
        } else if (!strcmp(k, "workload")) {
            if (strlen(v) >= sizeof S.workload) fail("spinlab.workload=%s: too long", v);
            strcpy(S.workload, v);
        } else if (!strcmp(k, "trace")) {
            S.trace = !strcmp(v, "1");
            if (strcmp(v, "0") && strcmp(v, "1")) fail("spinlab.trace=%s: 0 or 1", v);
        } else if (!strcmp(k, "bufkb")) {
            S.bufkb = strtol(v, &end, 10);
            if (*end || S.bufkb < 64 || S.bufkb > (1l << 22)) fail("spinlab.bufkb=%s: 64 to 4194304", v);
        } else if (!strcmp(k, "workers")) {
            S.workers = (int)strtol(v, &end, 10);
            if (*end || S.workers < 1 || S.workers > 256) fail("spinlab.workers=%s: 1 to 256", v);
        } else if (!strcmp(k, "hackbench")) {   // GROUPSxLOOPS, e.g. 2x20
            char extra;
            if (sscanf(v, "%dx%d%c", &S.hb_groups, &S.hb_loops, &extra) != 2 || S.hb_groups < 1 ||
                S.hb_loops < 1)
                fail("spinlab.hackbench=%s: GROUPSxLOOPS, e.g. 2x20", v);
        } else if (!strcmp(k, "costcalls")) {
            S.cost_calls = strtol(v, &end, 10);
            if (*end || S.cost_calls < 100 || S.cost_calls > 10000000) fail("spinlab.costcalls=%s: 100 to 10000000", v);
        } else if (!strcmp(k, "abphases")) {
            S.ab_phases = (int)strtol(v, &end, 10);
            if (*end || S.ab_phases < 2 || S.ab_phases > 64 || S.ab_phases % 2)
                fail("spinlab.abphases=%s: an even number from 2 to 64", v);
        } else if (!strcmp(k, "dumptrace")) {
            S.dump_lines = (int)strtol(v, &end, 10);
            if (*end || S.dump_lines < 0) fail("spinlab.dumptrace=%s: a number of lines", v);
        } else if (!strcmp(k, "costsym")) {
            if (strlen(v) >= sizeof S.cost_symbol) fail("spinlab.costsym=%s: too long", v);
            strcpy(S.cost_symbol, v);
        } else if (!strcmp(k, "clock") || !strcmp(k, "go") || !strcmp(k, "region") || !strcmp(k, "stream")) {
            if (strcmp(v, "0") && strcmp(v, "1")) fail("spinlab.%s=%s: 0 or 1", k, v);
            *(!strcmp(k, "clock") ? &S.clock : !strcmp(k, "go") ? &S.go
              : !strcmp(k, "region") ? &S.region : &S.stream) = v[0] == '1';
        } else if (!strcmp(k, "gt")) {   // HOLDER_CPU,HOLD_US,GAP_US[,WAITER_GAP_US]
            char extra;
            long w = -1;
            int n = sscanf(v, "%d,%ld,%ld,%ld%c", &S.gt_holder, &S.gt_hold_us, &S.gt_gap_us, &w, &extra);
            if ((n != 3 && n != 4) || S.gt_holder < 0 || S.gt_hold_us < 1 || S.gt_hold_us > 1000000 ||
                S.gt_gap_us < 0 || S.gt_gap_us > 1000000 || (n == 4 && (w < 0 || w > 1000000)))
                fail("spinlab.gt=%s: HOLDER_CPU,HOLD_US,GAP_US[,WAITER_GAP_US] (hold 1 to 1000000 us, "
                     "gaps 0 to 1000000 us)", v);
            S.gt_waiter_gap_us = w;
        } else if (!strcmp(k, "tscspacing")) {
            S.tsc_spacing = strtol(v, &end, 10);
            if (*end || S.tsc_spacing < 0 || S.tsc_spacing > 1000000000L)
                fail("spinlab.tscspacing=%s: 0 to 1000000000 iterations", v);
        } else if (!strcmp(k, "costrounds")) {
            S.cost_rounds = (int)strtol(v, &end, 10);
            if (*end || S.cost_rounds < 1 || S.cost_rounds > 100) fail("spinlab.costrounds=%s: 1 to 100", v);
        } else {
            fail("unknown kernel parameter spinlab.%s", k);
        }
    }
    if (strcmp(S.workload, "hackbench") && strcmp(S.workload, "forkexec") && strcmp(S.workload, "idle") &&
        strcmp(S.workload, "probecost") && strcmp(S.workload, "gt") && strcmp(S.workload, "tscread"))
        fail("spinlab.workload=%s: hackbench, forkexec, idle, probecost, gt or tscread", S.workload);
    if (S.ab_phases && (!S.trace || (strcmp(S.workload, "hackbench") && strcmp(S.workload, "forkexec"))))
        fail("spinlab.abphases needs spinlab.trace=1 and the hackbench or forkexec workload");
    if (S.region && (S.ab_phases || !S.trace || !strcmp(S.workload, "probecost")))
        fail("spinlab.region=1 reads the waits live: it needs spinlab.trace=1, no spinlab.abphases, "
             "and a workload other than probecost");
    if (!S.stream && (!S.region || !S.trace || S.go || S.clock))
        fail("spinlab.stream=0 (no waits port: the region and the control channel only) needs "
             "spinlab.region=1 and spinlab.trace=1, and no spinlab.go or spinlab.clock (both use "
             "ports the host gives only with the stream)");
    if (S.seconds == 0 && S.stream)
        fail("spinlab.seconds=0 (run until the VM is stopped) needs spinlab.stream=0: a stream "
             "ends with its trailer, after the workload");
}

// ---- the ports ----
// The device node of the virtio-serial port named `want`, waiting up to 10 s for it to appear
// (ports appear asynchronously); -1 when it does not.
static int find_port(const char *want, char *dev, size_t devsize) {
    char path[512], name[256];
    dev[0] = 0;
    for (int tries = 0; tries < 200 && !dev[0]; tries++) {
        DIR *d = opendir("/sys/class/virtio-ports");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
            if (read_small(path, name, sizeof name)) {
                name[strcspn(name, "\n")] = 0;
                if (!strcmp(name, want)) snprintf(dev, devsize, "/dev/%s", e->d_name);
            }
        }
        if (d) closedir(d);
        if (!dev[0]) usleep(50000);
    }
    if (!dev[0]) return -1;
    for (int tries = 0; tries < 100; tries++) {   // devtmpfs creates the node after the port
        int fd = open(dev, O_RDWR | O_CLOEXEC);
        if (fd >= 0) return fd;
        usleep(50000);
    }
    return -2;
}

// Whether the kernel command line says spinlab.stream=0, read before the port is opened (the
// settings are read after it, so that their errors reach the host in an ERROR frame).
static int stream_off(void) {
    char buf[4096];
    if (!read_small("/proc/cmdline", buf, sizeof buf)) return 0;
    for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
        if (!strcmp(tok, "spinlab.stream=0")) return 1;
    return 0;
}

static void open_port(void) {
    char dev[300];
    out_fd = find_port(PORT_NAME, dev, sizeof dev);
    if (out_fd == -1) {
        console("error: no virtio-serial port named %s after 10 s (is virtio_console loaded? "
                "QEMU needs -device virtserialport,name=%s)", PORT_NAME, PORT_NAME);
        exit(1);
    }
    if (out_fd < 0) {
        console("error: cannot open %s: %s", dev, strerror(errno));
        exit(1);
    }
}

// One byte from the host on the waits port (the go byte, the trailer's acknowledgement);
// -1 after timeout_ms without one.
static int read_host_byte(int timeout_ms) {
    struct pollfd p = {.fd = out_fd, .events = POLLIN};
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (now_ns() < deadline) {
        int r = poll(&p, 1, 100);
        if (r > 0 && (p.revents & POLLIN)) {
            unsigned char c;
            ssize_t n = read(out_fd, &c, 1);
            if (n == 1) return c;
        }
    }
    return -1;
}

// The host answers the trailer with one byte once it has read it.
static int wait_ack(int timeout_ms) { return read_host_byte(timeout_ms) == ACK_BYTE ? 0 : -1; }

// ---- the clock: the guest's TSC for each of the host's pings ----
// The host's helper (spinlab-linux-clock) writes an 8-byte ping and reads the 16-byte answer
// <the ping's 8 bytes, u64 rdtsc>, reading the host TSC just before the write and just after
// the answer: the guest's TSC lies inside that bracket. The thread runs SCHED_FIFO, pinned to
// one CPU (not the ground truth's holder CPU, which the host freezes), so that it answers at
// once however busy the guest is.
static int clock_fd = -1, clock_cpu;
static uint64_t clock_answers;   // read by the main thread at the end (a count, no order needed)

static int read_full(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) {   // the host end is not connected (yet, or again): wait for it
            usleep(5000);
            continue;
        }
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static void *clock_thread(void *arg) {
    (void)arg;
    uint8_t ping[8], answer[16];
    for (;;) {
        if (read_full(clock_fd, ping, sizeof ping)) {
            console("clock port: read failed: %s; clock answers stop", strerror(errno));
            return NULL;
        }
        _mm_lfence();
        uint64_t t = __rdtsc();
        _mm_lfence();
        memcpy(answer, ping, 8);
        for (int i = 0; i < 8; i++) answer[8 + i] = (uint8_t)(t >> (8 * i));
        if (write_all(clock_fd, answer, sizeof answer)) {
            console("clock port: write failed: %s; clock answers stop", strerror(errno));
            return NULL;
        }
        __atomic_add_fetch(&clock_answers, 1, __ATOMIC_RELAXED);
    }
}

static void start_clock(void) {
    char dev[300];
    clock_fd = find_port(CLOCK_PORT_NAME, dev, sizeof dev);
    if (clock_fd == -1)
        fail("spinlab.clock=1 but no virtio-serial port named %s after 10 s (QEMU needs "
             "-device virtserialport,name=%s)", CLOCK_PORT_NAME, CLOCK_PORT_NAME);
    if (clock_fd < 0) fail("cannot open %s (%s): %s", dev, CLOCK_PORT_NAME, strerror(errno));
    clock_cpu = (!strcmp(S.workload, "gt") && S.gt_holder == 0 && ncpus > 1) ? 1 : 0;
    pthread_attr_t a;
    pthread_attr_init(&a);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(clock_cpu, &one);
    struct sched_param sp = {.sched_priority = 50};
    pthread_attr_setaffinity_np(&a, sizeof one, &one);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &sp);
    pthread_t th;
    int r = pthread_create(&th, &a, clock_thread, NULL);
    if (r) fail("starting the clock thread: %s", strerror(r));
    pthread_attr_destroy(&a);
}

// ---- facts about the kernel ----
static char pv_line[256];        // the kernel's "PV spinlocks ..." line, or empty
static char tsc_mhz[32];          // the kernel's TSC calibration in MHz, or empty
static int hypervisor_flag = -1;

static void read_kernel_facts(void) {
    int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
    if (size > 0) {
        char *buf = malloc((size_t)size + 1);
        int n = buf ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size) : -1;
        if (n > 0) {
            buf[n] = 0;
            for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
                char *p;
                if ((p = strstr(line, "PV spinlocks"))) {
                    // keep the subsystem prefix ("kvm-guest: ") but drop "<6>[    0.0] "
                    char *start = strchr(line, ']');
                    start = start ? start + 1 : line;
                    while (*start == ' ') start++;
                    snprintf(pv_line, sizeof pv_line, "%s", start);
                }
                if ((p = strstr(line, "tsc: Refined TSC clocksource calibration: ")))
                    sscanf(p + 42, "%31[0-9.]", tsc_mhz);
                else if (!tsc_mhz[0] && (p = strstr(line, "tsc: Detected ")) && strstr(p, "MHz processor"))
                    sscanf(p + 14, "%31[0-9.]", tsc_mhz);
            }
        }
        free(buf);
    }
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "flags", 5)) {
            hypervisor_flag = strstr(line, " hypervisor ") != NULL || strstr(line, " hypervisor\n") != NULL;
            break;
        }
    }
    if (f) fclose(f);
}

// A whole-word match of sym in a file of "... sym ..." lines (kallsyms, blacklist, filters).
static int file_has_symbol(const char *path, const char *sym, int *readable) {
    FILE *f = fopen(path, "r");
    *readable = f != NULL;
    if (!f) return 0;
    static char iobuf[1 << 16];   // seq_file fills what it is given: fewer, larger reads
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    char line[1024];
    size_t n = strlen(sym);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        for (char *p = strstr(line, sym); p; p = strstr(p + 1, sym)) {
            char before = p == line ? ' ' : p[-1], after = p[n];
            if ((before == ' ' || before == '\t') &&
                (after == '\n' || after == ' ' || after == '\t' || after == 0)) { found = 1; break; }
        }
    }
    fclose(f);
    return found;
}

struct probe_target {
    char symbol[64];
    char reason[320];
    int ftrace;               // in available_filter_functions: the kprobe rides on ftrace
    char list_flags[64];      // flags in debugfs kprobes/list ([FTRACE], [OPTIMIZED], ...),
                              // [DISABLED] left out (the probes are read before enabling)
};

// The symbol must exist and not be blacklisted. A function in available_filter_functions exists
// (and its kprobe rides on ftrace); only one that is not there is looked up in /proc/kallsyms,
// the larger file (about 0.2 s to scan under TCG).
static void check_probeable(const char *sym, struct probe_target *t) {
    int readable;
    t->ftrace = file_has_symbol(TRACEFS "/available_filter_functions", sym, &readable);
    if (!t->ftrace && !file_has_symbol("/proc/kallsyms", sym, &readable))
        fail(readable ? "%s is not in /proc/kallsyms: this kernel cannot be probed there"
                      : "cannot read /proc/kallsyms (%s)", sym);
    if (file_has_symbol(DEBUGFS "/kprobes/blacklist", sym, &readable))
        fail("%s is in the kprobe blacklist (" DEBUGFS "/kprobes/blacklist): it cannot be probed", sym);
}

static void choose_target(struct probe_target *t) {
    if (strstr(pv_line, "PV spinlocks enabled")) {
        snprintf(t->symbol, sizeof t->symbol, "__pv_queued_spin_lock_slowpath");
        snprintf(t->reason, sizeof t->reason, "the kernel said '%s'", pv_line);
    } else {
        snprintf(t->symbol, sizeof t->symbol, "native_queued_spin_lock_slowpath");
        snprintf(t->reason, sizeof t->reason, "%s", pv_line[0] ? pv_line : "no PV spinlocks line in the kernel log");
    }
    check_probeable(t->symbol, t);
}

static void read_list_flags(struct probe_target *t) {
    FILE *f = fopen(DEBUGFS "/kprobes/list", "r");
    char line[512];
    t->list_flags[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strstr(line, t->symbol)) continue;
        for (char *b = strchr(line, '['); b; b = strchr(b + 1, '[')) {
            char *e = strchr(b, ']');
            if (!e) break;
            char tok[64];
            snprintf(tok, sizeof tok, "%.*s", (int)(e - b + 1), b);
            if (strcmp(tok, "[DISABLED]") && !strstr(t->list_flags, tok) && strlen(t->list_flags) + strlen(tok) + 1 < sizeof t->list_flags)
                strcat(t->list_flags, tok);
        }
    }
    if (f) fclose(f);
}

// ---- tracefs ----
static void add_probes(const char *group, const char *begin, const char *end, const char *sym) {
    char def[256];
    snprintf(def, sizeof def, "p:%s/%s %s lock=%%di:x64", group, begin, sym);
    int r = write_file(TRACEFS "/kprobe_events", def, 1);
    if (r) fail("adding the kprobe '%s' failed: %s (is %s probeable? see %s/kprobes/blacklist)",
                def, strerror(-r), sym, DEBUGFS);
    snprintf(def, sizeof def, "r64:%s/%s %s", group, end, sym);
    r = write_file(TRACEFS "/kprobe_events", def, 1);
    if (r) fail("adding the kretprobe '%s' failed: %s", def, strerror(-r));
}

static void set_group(const char *group, int on) {
    char path[256];
    snprintf(path, sizeof path, TRACEFS "/events/%s/enable", group);
    must_write(path, on ? "1" : "0", 0);
}

static void setup_tracing(long bufkb) {
    char v[32];
    must_write(TRACEFS "/tracing_on", "0", 0);
    must_write(TRACEFS "/kprobe_events", "", 0);
    int r = write_file(TRACEFS "/trace_clock", "x86-tsc", 0);
    if (r) fail("trace_clock x86-tsc: %s", strerror(-r));
    snprintf(v, sizeof v, "%ld", bufkb);
    must_write(TRACEFS "/buffer_size_kb", v, 0);
    must_write(TRACEFS "/options/overwrite", "0", 0);   // a full buffer drops new events, counted
}

static void clear_trace(void) { must_write(TRACEFS "/trace", "", 0); }

struct probe_counts { uint64_t hits, misses; int found; };

// kprobe_profile: "  <event>  <hits>  <misses>" per probe event.
static void read_profile(const char *event, struct probe_counts *c) {
    FILE *f = fopen(TRACEFS "/kprobe_profile", "r");
    char line[512], name[256];
    unsigned long long h, m;
    *c = (struct probe_counts){0};
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, " %255s %llu %llu", name, &h, &m) == 3) {
            const char *base = strrchr(name, '/');
            base = base ? base + 1 : name;
            if (!strcmp(base, event)) { c->hits = h; c->misses = m; c->found = 1; }
        }
    }
    if (f) fclose(f);
}

// ---- workloads ----
struct workload_result { uint64_t ops, runs_failed, busy_ns; const char *unit; };

// A/B (spinlab.abphases=N): the workload's time is cut into N equal phases, the probes off in
// the first and on and off in turn after it (so the last is traced), and each phase's
// completed operations and length are kept: the workload's own throughput traced against
// untraced within one boot, alternating, so that a change of host load touches both. The
// probes are armed and disarmed between phases; the time that takes (and the operations
// done meanwhile) belongs to neither phase.
#define MAX_PHASES 64
struct phase { int traced; uint64_t ops, ns; };
static struct phase phases[MAX_PHASES];
// The probes are not armed from gap.from to gap.to (x86-tsc, the events' clock): a wait open
// when a gap begins may have lost its end, and events inside a gap come from half-armed
// probes, so read_cpu_trace pairs nothing across or inside a gap.
struct gap { uint64_t from, to; };
static struct gap gaps[MAX_PHASES];
static int ngaps;
static int cur_phase = -1;
static uint64_t phase_start, phase_ops0;
static uint64_t disarm_hits_begin, disarm_hits_end;   // hits counted while disarming

static void probes_arm(int on) {
    if (on) {
        set_group("spinlab", 1);
        return;
    }
    struct probe_counts b0, e0, b1, e1;   // the kernel counts hits it no longer records here
    read_profile("wait_begin", &b0);
    read_profile("wait_end", &e0);
    set_group("spinlab", 0);
    read_profile("wait_begin", &b1);
    read_profile("wait_end", &e1);
    disarm_hits_begin += b1.hits - b0.hits;
    disarm_hits_end += e1.hits - e0.hits;
}

// Whether the workload goes on, given its completed operations so far.
static int keep_going(uint64_t deadline, uint64_t ops) {
    uint64_t now = now_ns();
    if (!S.ab_phases) return now < deadline;
    uint64_t len = (uint64_t)(S.seconds * 1e9 / S.ab_phases);
    if (cur_phase >= 0 && now - phase_start < len) return 1;
    if (cur_phase >= 0) {
        phases[cur_phase].ops = ops - phase_ops0;
        phases[cur_phase].ns = now - phase_start;
    }
    if (++cur_phase == S.ab_phases) return 0;   // the last (traced) phase stays armed
    phases[cur_phase].traced = cur_phase % 2;
    if (cur_phase == 0) {
        gaps[ngaps].from = 0;                       // nothing is armed before phase 1
    } else if (phases[cur_phase].traced) {
        probes_arm(1);
        gaps[ngaps++].to = __rdtsc();
    } else {
        gaps[ngaps].from = __rdtsc();
        probes_arm(0);
    }
    phase_start = now_ns();
    phase_ops0 = ops;
    return 1;
}

// The running workload's operations, for the control channel's workload query (channel.h
// agent_workload): its result, and forkexec's per-worker counts while its workers run.
static struct workload_result *live_result;
static uint64_t *live_worker_ops;
static int live_workers;

void agent_workload(struct channel_workload *out) {
    out->name = S.workload;
    struct workload_result *r = __atomic_load_n(&live_result, __ATOMIC_ACQUIRE);
    if (!r) return;
    out->unit = __atomic_load_n(&r->unit, __ATOMIC_RELAXED);
    out->ops = __atomic_load_n(&r->ops, __ATOMIC_RELAXED);
    out->failed = __atomic_load_n(&r->runs_failed, __ATOMIC_RELAXED);
    uint64_t *w = __atomic_load_n(&live_worker_ops, __ATOMIC_ACQUIRE);
    for (int i = 0; w && i < __atomic_load_n(&live_workers, __ATOMIC_RELAXED); i++)
        out->ops += __atomic_load_n(&w[i], __ATOMIC_RELAXED);
}

static pid_t spawn(char *const argv[]) {
    pid_t p = fork();
    if (p == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) { dup2(null, 1); close(null); }
        execv(argv[0], argv);
        _exit(127);
    }
    return p;
}

static void run_hackbench(uint64_t deadline, struct workload_result *r) {
    char g[16], l[16];
    snprintf(g, sizeof g, "%d", S.hb_groups);
    snprintf(l, sizeof l, "%d", S.hb_loops);
    char *argv[] = {HACKBENCH, "-g", g, "-l", l, "-s", "100", NULL};
    if (access(HACKBENCH, X_OK)) fail("%s is not in the initramfs", HACKBENCH);
    __atomic_store_n(&r->unit, "hackbench runs", __ATOMIC_RELAXED);
    while (keep_going(deadline, r->ops)) {
        uint64_t t0 = now_ns();
        pid_t p = spawn(argv);
        if (p < 0) fail("fork: %s", strerror(errno));
        int st;
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {}
        // whole stores: the control channel's thread reads the counts meanwhile (agent_workload)
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            __atomic_store_n(&r->ops, r->ops + 1, __ATOMIC_RELAXED);
            r->busy_ns += now_ns() - t0;
        } else {
            __atomic_store_n(&r->runs_failed, r->runs_failed + 1, __ATOMIC_RELAXED);
        }
        if (r->runs_failed > 3 && r->ops == 0) fail("hackbench failed %llu times (status %d)", (unsigned long long)r->runs_failed, st);
    }
}

// forkexec: workers each fork/exec /bin/true and write, then remove, a 4 KiB file in /tmp.
static void run_forkexec(uint64_t deadline, struct workload_result *r) {
    int n = S.workers ? S.workers : 2 * ncpus;
    struct shared { volatile int stop; uint64_t ops[256]; } *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) fail("mmap: %s", strerror(errno));
    memset((void *)sh, 0, sizeof *sh);
    __atomic_store_n(&r->unit, "fork/exec + 4 KiB tmpfs file", __ATOMIC_RELAXED);
    __atomic_store_n(&live_workers, n, __ATOMIC_RELAXED);
    __atomic_store_n(&live_worker_ops, sh->ops, __ATOMIC_RELEASE);
    pid_t pids[256];
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            char file[64], block[4096];
            memset(block, 'x', sizeof block);
            snprintf(file, sizeof file, "/tmp/forkexec.%d", i);
            char *argv[] = {"/bin/true", NULL};
            while (!sh->stop) {
                pid_t p = fork();
                if (p == 0) { execv(argv[0], argv); _exit(127); }
                int st;
                if (p > 0) while (waitpid(p, &st, 0) < 0 && errno == EINTR) {}
                int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0600);
                if (fd >= 0) { write_all(fd, block, sizeof block); close(fd); }
                unlink(file);
                __atomic_add_fetch(&sh->ops[i], 1, __ATOMIC_RELAXED);
            }
            _exit(0);
        }
        if (pids[i] < 0) fail("fork: %s", strerror(errno));
    }
    uint64_t done;
    do {
        usleep(20000);
        done = 0;
        for (int i = 0; i < n; i++) done += __atomic_load_n(&sh->ops[i], __ATOMIC_RELAXED);
    } while (keep_going(deadline, done));
    sh->stop = 1;
    for (int i = 0; i < n; i++) while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {}
    r->busy_ns = now_ns() - t0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) total += sh->ops[i];
    __atomic_store_n(&live_worker_ops, (uint64_t *)NULL, __ATOMIC_RELEASE);   // counted in r->ops from here
    __atomic_store_n(&r->ops, total, __ATOMIC_RELAXED);
    r->unit = "fork/exec + 4 KiB tmpfs file";
}

// ---- gt: the ground-truth module ----
// Loads guest/gt/spinlab_gt.ko (its kthreads start at once), lets it run, stops it, then (after
// tracing is off) reads its records: the lock's address, its stats and every hold.
struct gt_result {
    uint64_t lock, holds_n, dropped, max_holds, tsc_khz, hold_cycles, gap_cycles, start_tsc, stop_tsc;
    uint64_t acq[4096];
    struct hold_rec *holds;
    char params[160];
};
static struct gt_result GT;

// The kernel's latest lines that mention spinlab_gt (why a load failed), for an error.
static void gt_kernel_lines(char *out, size_t n) {
    out[0] = 0;
    int size = klogctl(10, NULL, 0);
    char *buf = size > 0 ? malloc((size_t)size + 1) : NULL;
    int got = buf ? klogctl(3, buf, size) : -1;
    if (got > 0) {
        buf[got] = 0;
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
            if (strstr(line, "spinlab_gt")) snprintf(out, n, "%s", line);   // the last one
    }
    free(buf);
}

static void gt_start(void) {
    if (S.gt_holder >= ncpus) fail("spinlab.gt: holder CPU %d, but the guest has %d CPUs", S.gt_holder, ncpus);
    if (ncpus < 2) fail("spinlab.workload=gt needs 2 CPUs or more (a holder and a waiter)");
    int n = snprintf(GT.params, sizeof GT.params, "holder_cpu=%d hold_us=%ld gap_us=%ld", S.gt_holder,
                     S.gt_hold_us, S.gt_gap_us);
    if (S.gt_waiter_gap_us >= 0)
        snprintf(GT.params + n, sizeof GT.params - (size_t)n, " waiter_gap_us=%ld", S.gt_waiter_gap_us);
    int fd = open(GT_MODULE_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open %s: %s (is it in the initramfs?)", GT_MODULE_PATH, strerror(errno));
    if (syscall(SYS_finit_module, fd, GT.params, 0)) {
        int e = errno;
        char why[512];
        gt_kernel_lines(why, sizeof why);
        fail("loading %s (%s) failed: %s; kernel: %s", GT_MODULE_PATH, GT.params, strerror(e),
             why[0] ? why : "(nothing)");
    }
    close(fd);
}

static void run_gt(uint64_t deadline, struct workload_result *r) {
    uint64_t t0 = now_ns();
    gt_start();
    for (uint64_t now; (now = now_ns()) < deadline;) {
        struct timespec ts = {(time_t)((deadline - now) / 1000000000ull), (long)((deadline - now) % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
    must_write(GT_DEBUGFS "/stop", "1", 0);
    r->busy_ns = now_ns() - t0;
    r->unit = "gt_lock acquisitions";
}

// After the workload: the module's stats and holds, checked against each other, then rmmod.
static void gt_collect(struct workload_result *r) {
    static char stats[1 << 16];
    if (!read_small(GT_DEBUGFS "/stats", stats, sizeof stats)) fail("cannot read " GT_DEBUGFS "/stats: %s", strerror(errno));
    int have = 0;
    for (char *line = strtok(stats, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long v, c;
        if (sscanf(line, "lock 0x%llx", &v) == 1) { GT.lock = v; have |= 1; }
        else if (sscanf(line, "holds %llu", &v) == 1) { GT.holds_n = v; have |= 2; }
        else if (sscanf(line, "dropped %llu", &v) == 1) { GT.dropped = v; have |= 4; }
        else if (sscanf(line, "max_holds %llu", &v) == 1) GT.max_holds = v;
        else if (sscanf(line, "tsc_khz %llu", &v) == 1) GT.tsc_khz = v;
        else if (sscanf(line, "hold_cycles %llu", &v) == 1) GT.hold_cycles = v;
        else if (sscanf(line, "gap_cycles %llu", &v) == 1) GT.gap_cycles = v;
        else if (sscanf(line, "start_tsc %llu", &v) == 1) GT.start_tsc = v;
        else if (sscanf(line, "stop_tsc %llu", &v) == 1) GT.stop_tsc = v;
        else if (sscanf(line, "acquisitions %llu %llu", &c, &v) == 2 && c < 4096) GT.acq[c] = v;
    }
    if (have != 7) fail(GT_DEBUGFS "/stats lacks lock, holds or dropped");
    size_t want = GT.holds_n * sizeof(struct hold_rec);
    GT.holds = malloc(want + 1);
    if (!GT.holds) fail("out of memory for %llu holds", (unsigned long long)GT.holds_n);
    int fd = open(GT_DEBUGFS "/holds", O_RDONLY);
    if (fd < 0) fail("cannot open " GT_DEBUGFS "/holds: %s", strerror(errno));
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, (char *)GT.holds + got, want + 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) fail("reading " GT_DEBUGFS "/holds: %s", strerror(errno));
        if (k == 0 || (got += (size_t)k) > want) break;
    }
    close(fd);
    if (got != want)
        fail(GT_DEBUGFS "/holds has %zu bytes, stats says %llu holds of 24", got, (unsigned long long)GT.holds_n);
    r->ops = 0;
    for (int c = 0; c < ncpus && c < 4096; c++) r->ops += GT.acq[c];
    if (syscall(SYS_delete_module, "spinlab_gt", O_NONBLOCK))
        console("rmmod spinlab_gt: %s (carrying on)", strerror(errno));
}

static void emit_holds(void) {
    static uint8_t buf[16 + HOLDS_PER_FRAME * sizeof(struct hold_rec)];
    uint64_t i = 0;
    do {   // at least one frame, which carries the lock even with no hold
        uint32_t n = (uint32_t)(GT.holds_n - i < HOLDS_PER_FRAME ? GT.holds_n - i : HOLDS_PER_FRAME);
        for (int b = 0; b < 8; b++) buf[b] = (uint8_t)(GT.lock >> (8 * b));
        put32(buf + 8, (uint32_t)i);
        put32(buf + 12, n);
        memcpy(buf + 16, GT.holds + i, n * sizeof(struct hold_rec));
        emit(F_HOLDS, buf, 16 + n * (uint32_t)sizeof(struct hold_rec));
        i += n;
    } while (i < GT.holds_n);
}

static void js_gt(struct js *t) {
    char lock[32];
    snprintf(lock, sizeof lock, "0x%llx", (unsigned long long)GT.lock);
    js_open(t, "gt");
    js_s(t, "lock", lock);
    js_s(t, "module_params", GT.params);
    js_i64(t, "holder_cpu", S.gt_holder);
    js_i64(t, "hold_us", S.gt_hold_us);
    js_i64(t, "gap_us", S.gt_gap_us);
    js_u64(t, "holds", GT.holds_n);
    js_u64(t, "dropped", GT.dropped);
    js_u64(t, "max_holds", GT.max_holds);
    js_u64(t, "tsc_khz", GT.tsc_khz);
    js_u64(t, "hold_cycles", GT.hold_cycles);
    js_u64(t, "gap_cycles", GT.gap_cycles);
    js_u64(t, "start_tsc", GT.start_tsc);
    js_u64(t, "stop_tsc", GT.stop_tsc);
    js_key(t, "acquisitions");
    js_raw(t, "[", 1);
    for (int c = 0; c < ncpus; c++) {
        char b[32];
        js_raw(t, b, (size_t)snprintf(b, sizeof b, "%s%llu", c ? "," : "", (unsigned long long)GT.acq[c]));
    }
    js_raw(t, "]", 1);
    js_close(t);
}

// tscread: every CPU reads its TSC in a loop, spinlab.tscspacing ALU iterations apart (no pause,
// no system call, no other clock: nothing else leaves translated code under TCG), for the
// workload's time. What QEMU's TCG clock does with a guest's TSC reads (issue 52: its offset
// creeps with them) is measured against the host's clock by the clock helper; ops are the reads.
static volatile int tscread_stop;
static uint64_t *tscread_counts;

static void *tscread_thread(void *arg) {
    int cpu = (int)(intptr_t)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    uint64_t n = 0;
    volatile uint64_t sink = 0;
    while (!tscread_stop) {
        for (long i = 0; i < S.tsc_spacing; i++) sink += (uint64_t)i;
        sink += __rdtsc();
        n++;
    }
    tscread_counts[cpu] = n;
    return NULL;
}

static void run_tscread(uint64_t deadline, struct workload_result *r) {
    uint64_t t0 = now_ns();
    pthread_t *th = calloc((size_t)ncpus, sizeof *th);
    tscread_counts = calloc((size_t)ncpus, sizeof *tscread_counts);
    if (!th || !tscread_counts) fail("out of memory");
    for (int cpu = 0; cpu < ncpus; cpu++)
        if (pthread_create(&th[cpu], NULL, tscread_thread, (void *)(intptr_t)cpu)) fail("cannot start tscread on cpu %d", cpu);
    for (uint64_t now; (now = now_ns()) < deadline;) {
        struct timespec ts = {(time_t)((deadline - now) / 1000000000ull), (long)((deadline - now) % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
    tscread_stop = 1;
    for (int cpu = 0; cpu < ncpus; cpu++) {
        pthread_join(th[cpu], NULL);
        r->ops += tscread_counts[cpu];
    }
    free(th);
    r->busy_ns = now_ns() - t0;
    r->unit = "TSC reads";
}

static void run_workload(double seconds, struct workload_result *r) {
    // seconds 0 (spinlab.stream=0 only): until the VM is stopped
    uint64_t deadline = seconds == 0 ? UINT64_MAX : now_ns() + (uint64_t)(seconds * 1e9);
    *r = (struct workload_result){0};
    __atomic_store_n(&live_result, r, __ATOMIC_RELEASE);
    if (!strcmp(S.workload, "hackbench")) run_hackbench(deadline, r);
    else if (!strcmp(S.workload, "forkexec")) run_forkexec(deadline, r);
    else if (!strcmp(S.workload, "gt")) run_gt(deadline, r);
    else if (!strcmp(S.workload, "tscread")) run_tscread(deadline, r);
    else { r->unit = "none"; while (now_ns() < deadline) usleep(100000); r->busy_ns = (uint64_t)(seconds * 1e9); }
}

// ---- reading one CPU's trace ----
struct cpu_stats {
    uint64_t begins, ends, waits, unpaired_begin, unpaired_end, nested, max_depth;
    uint64_t lost_markers, unparsed, too_deep;
    uint64_t cut, in_gaps;    // A/B: open waits cut by a disarming; events inside a gap
    uint64_t first_ts, last_ts;
    // per_cpu/cpuN/stats
    uint64_t entries, overrun, commit_overrun, dropped, bytes;
    uint64_t read_events;     // consumed through trace_pipe (spinlab.region=1), no longer in entries
};

#define MAX_DEPTH 32
static struct wait_rec batch[WAITS_PER_FRAME];
static int batch_n;
static uint64_t total_waits;
// spinlab.region=1: the CPUs' reader threads add to the batch side by side.
static pthread_mutex_t batch_lock = PTHREAD_MUTEX_INITIALIZER;

static void flush_batch(void) {
    pthread_mutex_lock(&batch_lock);
    if (batch_n) emit(F_WAITS, batch, (uint32_t)(batch_n * sizeof batch[0]));
    batch_n = 0;
    pthread_mutex_unlock(&batch_lock);
}

static void add_wait(const struct wait_rec *w) {
    pthread_mutex_lock(&batch_lock);
    batch[batch_n++] = *w;
    total_waits++;
    if (batch_n == WAITS_PER_FRAME) {
        emit(F_WAITS, batch, (uint32_t)(batch_n * sizeof batch[0]));
        batch_n = 0;
    }
    pthread_mutex_unlock(&batch_lock);
}

static void read_cpu_stats(int cpu, struct cpu_stats *c) {
    char path[128], buf[2048];
    snprintf(path, sizeof path, TRACEFS "/per_cpu/cpu%d/stats", cpu);
    if (!read_small(path, buf, sizeof buf)) fail("cannot read %s", path);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long v;
        if (sscanf(line, "entries: %llu", &v) == 1) c->entries = v;
        else if (sscanf(line, "overrun: %llu", &v) == 1) c->overrun = v;
        else if (sscanf(line, "commit overrun: %llu", &v) == 1) c->commit_overrun = v;
        else if (sscanf(line, "dropped events: %llu", &v) == 1) c->dropped = v;
        else if (sscanf(line, "bytes: %llu", &v) == 1) c->bytes = v;
        else if (sscanf(line, "read events: %llu", &v) == 1) c->read_events = v;
    }
}

// The timestamp is the number ending just before ": <event>:".
static int parse_ts(const char *line, const char *ev, uint64_t *ts) {
    const char *p = ev;
    while (p > line && p[-1] == ' ') p--;
    const char *e = p;
    while (p > line && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == e) return -1;
    *ts = strtoull(p, NULL, 10);
    return 0;
}

// One CPU's trace text, line by line (tracefs per_cpu/cpuN/trace after the run, its trace_pipe
// live with spinlab.region=1, or a file in --replay), paired into waits: a begin is pushed on
// the CPU's stack, an end pops the latest begin (a wait that began inside another, from an
// interrupt, ends first). An end with nothing open and the begins left open at the end are
// counted as unpaired, never guessed at. Each wait goes to the stream and, with the region, into
// the CPU's lock class 0.
struct pairing {
    int cpu;
    struct cpu_stats *c;
    char bpat[64], epat[64];
    struct { uint64_t lock, ts; } stack[MAX_DEPTH];
    int depth, lineno, gi;
};

static void pairing_init(struct pairing *p, int cpu, const char *begin_ev, const char *end_ev,
                         struct cpu_stats *c) {
    memset(p, 0, sizeof *p);
    p->cpu = cpu;
    p->c = c;
    snprintf(p->bpat, sizeof p->bpat, ": %s: ", begin_ev);
    snprintf(p->epat, sizeof p->epat, ": %s: ", end_ev);
}

static void pairing_line(struct pairing *p, const char *line) {
    struct cpu_stats *c = p->c;
    if (p->lineno++ < S.dump_lines) fprintf(stderr, "trace cpu%d: %s", p->cpu, line);
    if (line[0] == '#' || line[0] == '\n' || line[0] == 0) return;
    const char *b = strstr(line, p->bpat), *e = b ? NULL : strstr(line, p->epat);
    uint64_t ts;
    if (!b && !e) {
        if (strstr(line, "LOST") && strstr(line, "EVENTS")) c->lost_markers++;
        else c->unparsed++;
        return;
    }
    if (parse_ts(line, b ? b : e, &ts)) { c->unparsed++; return; }
    if (!c->first_ts) c->first_ts = ts;
    c->last_ts = ts;
    while (p->gi < ngaps && ts > gaps[p->gi].to) p->gi++;
    if (p->gi < ngaps && ts >= gaps[p->gi].from) {    // inside a gap: counted, never paired
        c->cut += (uint64_t)p->depth;
        c->unpaired_begin += (uint64_t)p->depth;
        p->depth = 0;
        c->in_gaps++;
        if (b) { c->begins++; c->unpaired_begin++; }
        else { c->ends++; c->unpaired_end++; }
        return;
    }
    if (p->gi > 0 && p->depth && p->stack[p->depth - 1].ts < gaps[p->gi - 1].to) {   // opened before a gap
        c->cut += (uint64_t)p->depth;
        c->unpaired_begin += (uint64_t)p->depth;
        p->depth = 0;
    }
    if (b) {
        const char *l = strstr(b, "lock=0x");
        if (!l) { c->unparsed++; return; }
        c->begins++;
        if (p->depth == MAX_DEPTH) { c->too_deep++; c->unpaired_begin++; return; }
        p->stack[p->depth].lock = strtoull(l + 7, NULL, 16);
        p->stack[p->depth].ts = ts;
        p->depth++;
        if ((uint64_t)p->depth > c->max_depth) c->max_depth = (uint64_t)p->depth;
    } else {
        c->ends++;
        if (p->depth == 0) { c->unpaired_end++; return; }
        p->depth--;
        struct wait_rec w = {.cpu = (uint32_t)p->cpu, .depth = (uint16_t)p->depth,
                             .lock = p->stack[p->depth].lock, .start = p->stack[p->depth].ts, .end = ts};
        if (ts < w.start) fail("cpu %d: a wait ends (%llu) before it starts (%llu)",
                               p->cpu, (unsigned long long)ts, (unsigned long long)w.start);
        if (p->depth) c->nested++;
        c->waits++;
        if (S.region) {   // the live reader of this CPU: the one writer of its block and buffers
            region_record_wait(p->cpu, w.start, w.end);
            trace_record_wait(p->cpu, w.lock, w.start, w.end);
        }
        add_wait(&w);
    }
}

static void pairing_end(struct pairing *p) {
    p->c->unpaired_begin += (uint64_t)p->depth;
    p->depth = 0;
}

// Reads one CPU's trace text from a file, whole.
static void read_cpu_trace(int cpu, const char *path, const char *begin_ev, const char *end_ev,
                           struct cpu_stats *c) {
    FILE *f = fopen(path, "r");
    if (!f) fail("cannot open %s: %s", path, strerror(errno));
    static char line[4096];
    static struct pairing p;
    pairing_init(&p, cpu, begin_ev, end_ev, c);
    while (fgets(line, sizeof line, f)) pairing_line(&p, line);
    fclose(f);
    pairing_end(&p);
    flush_batch();
}

// ---- spinlab.region=1: each CPU's events read live ----
// A thread per CPU reads its trace_pipe (which consumes what it reads) and pairs as it goes.
// live_stop() is called once tracing is off: each thread then reads what is left (a read that
// finds the pipe empty for 200 ms ends it) and exits.
struct live_reader {
    pthread_t thread;
    int cpu, fd;
    struct cpu_stats stats;
    struct pairing pairing;
};
static struct live_reader *live;
static volatile int live_stopping;

static void *live_thread(void *arg) {
    struct live_reader *r = arg;
    cpu_set_t set;   // beside its CPU's events, so that reading them takes that CPU's time
    CPU_ZERO(&set);
    CPU_SET(r->cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    char buf[16384], line[4096];
    size_t fill = 0;
    int idle_ms = 0, overlong = 0;
    trace_reader_started(r->cpu);
    // Not poll(): a trace_pipe polls readable only once its buffer is buffer_percent (50 %) full.
    // A non-blocking read says EAGAIN when it is empty; the thread then sleeps 20 ms.
    for (;;) {
        ssize_t got = read(r->fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno != EAGAIN) fail("cpu %d: reading its trace_pipe: %s", r->cpu, strerror(errno));
        // Trace sessions: this thread is the CPU's writer, and this is its tick (trace.h).
        trace_tick(r->cpu, r->stats.last_ts, got <= 0);
        if (got <= 0) {
            if (__atomic_load_n(&live_stopping, __ATOMIC_ACQUIRE) && (idle_ms += 20) >= 200) break;
            usleep(20000);
            continue;
        }
        idle_ms = 0;
        for (ssize_t i = 0; i < got; i++) {
            if (fill < sizeof line - 1) line[fill++] = buf[i];
            else overlong = 1;   // longer than any event's line: not parsed, counted once
            if (buf[i] == '\n') {
                line[fill] = 0;
                if (overlong) r->stats.unparsed++;
                else pairing_line(&r->pairing, line);
                fill = 0;
                overlong = 0;
            }
        }
    }
    if (fill) r->stats.unparsed++;
    pairing_end(&r->pairing);
    trace_reader_exit(r->cpu);
    return NULL;
}

static void live_start(const char *begin_ev, const char *end_ev) {
    live = calloc((size_t)ncpus, sizeof *live);
    if (!live) fail("out of memory");
    for (int cpu = 0; cpu < ncpus; cpu++) {
        struct live_reader *r = &live[cpu];
        char path[128];
        snprintf(path, sizeof path, TRACEFS "/per_cpu/cpu%d/trace_pipe", cpu);
        r->cpu = cpu;
        r->fd = open(path, O_RDONLY | O_NONBLOCK);
        if (r->fd < 0) fail("cannot open %s: %s", path, strerror(errno));
        pairing_init(&r->pairing, cpu, begin_ev, end_ev, &r->stats);
        if (pthread_create(&r->thread, NULL, live_thread, r)) fail("cannot start cpu %d's reader", cpu);
    }
}

static void live_stop(void) {
    __atomic_store_n(&live_stopping, 1, __ATOMIC_RELEASE);
    for (int cpu = 0; cpu < ncpus; cpu++) {
        pthread_join(live[cpu].thread, NULL);
        close(live[cpu].fd);
    }
    flush_batch();
}

static void emit_cpu(int cpu, const struct cpu_stats *c) {
    struct js j = {0};
    js_open(&j, NULL);
    js_i64(&j, "cpu", cpu);
    js_u64(&j, "begins", c->begins);
    js_u64(&j, "ends", c->ends);
    js_u64(&j, "waits", c->waits);
    js_u64(&j, "unpaired_begin", c->unpaired_begin);
    js_u64(&j, "unpaired_end", c->unpaired_end);
    js_u64(&j, "nested", c->nested);
    js_u64(&j, "max_depth", c->max_depth);
    js_u64(&j, "too_deep", c->too_deep);
    js_u64(&j, "cut", c->cut);
    js_u64(&j, "in_gaps", c->in_gaps);
    js_u64(&j, "lost_markers", c->lost_markers);
    js_u64(&j, "unparsed", c->unparsed);
    js_u64(&j, "first_ts", c->first_ts);
    js_u64(&j, "last_ts", c->last_ts);
    js_u64(&j, "entries", c->entries);
    js_u64(&j, "overrun", c->overrun);
    js_u64(&j, "commit_overrun", c->commit_overrun);
    js_u64(&j, "dropped", c->dropped);
    js_u64(&j, "bytes", c->bytes);
    js_u64(&j, "read_events", c->read_events);
    js_close(&j);
    js_emit(&j, F_CPU);
}

// ---- probecost: what a kprobe/kretprobe pair adds to a call ----
static uint64_t time_calls(long n) {
    uint64_t t0 = __rdtsc();
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    return __rdtsc() - t0;
}

static void probecost(struct js *t) {
    struct probe_target c = {0};
    snprintf(c.symbol, sizeof c.symbol, "%s", S.cost_symbol);
    check_probeable(c.symbol, &c);
    add_probes("spinlabcost", "call_begin", "call_end", c.symbol);
    read_list_flags(&c);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one)) fail("sched_setaffinity: %s", strerror(errno));
    js_open(t, "probecost");
    js_s(t, "symbol", c.symbol);
    js_b(t, "ftrace", c.ftrace);
    js_s(t, "kprobes_list_flags", c.list_flags);
    js_i64(t, "calls", S.cost_calls);
    js_key(t, "rounds");
    js_raw(t, "[", 1);
    t->need_comma = 0;
    time_calls(S.cost_calls / 10);   // warm up
    for (int round = 0; round < S.cost_rounds; round++) {
        uint64_t plain = time_calls(S.cost_calls);
        clear_trace();
        must_write(TRACEFS "/tracing_on", "1", 0);
        set_group("spinlabcost", 1);
        uint64_t probed = time_calls(S.cost_calls);
        set_group("spinlabcost", 0);
        must_write(TRACEFS "/tracing_on", "0", 0);
        struct cpu_stats cs = {0};
        read_cpu_stats(0, &cs);
        js_open(t, NULL);
        js_u64(t, "plain_cycles", plain);
        js_u64(t, "probed_cycles", probed);
        js_u64(t, "entries", cs.entries);
        js_u64(t, "dropped", cs.dropped + cs.overrun);
        js_close(t);
    }
    js_raw(t, "]", 1);
    t->need_comma = 1;
    struct probe_counts pb, pe;
    read_profile("call_begin", &pb);
    read_profile("call_end", &pe);
    js_u64(t, "begin_hits", pb.hits);
    js_u64(t, "begin_misses", pb.misses);
    js_u64(t, "end_hits", pe.hits);
    js_u64(t, "end_misses", pe.misses);
    js_close(t);
}

static uint64_t t_start, t_port, t_checked;   // the agent's start; the probe target checked

// ---- spinlab.region=1: the region, its APIC ids and its clock publications ----
#define REGION_CLOCK_PERIOD_US 10000   // as spinlab's kernel publishes at its 100 Hz tick
static char region_why[256];

// Each CPU's "apicid" from /proc/cpuinfo (its "processor" line names the CPU).
static void region_apic_ids(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int cpu = -1;
    unsigned apic;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "processor : %d", &cpu) == 1) continue;
        if (cpu >= 0 && sscanf(line, "apicid : %u", &apic) == 1) region_set_apic_id(cpu, apic);
    }
    if (f) fclose(f);
}

// Publishes the guest's TSC every 10 ms from a SCHED_FIFO thread, so that the publications go on
// under the workload (the host's clock correlation brackets them; a guest whose publications
// stop is taken for gone).
static void *region_clock_thread(void *arg) {
    (void)arg;
    struct sched_param sp = {.sched_priority = 50};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);   // best effort: root in the guest
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        next.tv_nsec += REGION_CLOCK_PERIOD_US * 1000L;
        if (next.tv_nsec >= 1000000000L) { next.tv_sec++; next.tv_nsec -= 1000000000L; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        _mm_lfence();
        uint64_t tsc = __rdtsc();
        region_clock_publish(tsc, (uint32_t)sched_getcpu(), REGION_CLOCK_PERIOD_US);
    }
    return NULL;
}

// The ABI's name of the lock the kernel chose (modes.py observed_mode, in the ABI's words):
// "pvqspin" (Linux's paravirtual queued spinlock, which spinlab's pvqspin follows), "mcs" (the
// native queued spinlock: an MCS queue behind a pending bit) or "tas" (virt_spin_lock).
static const char *kernel_lock_name(void) {
    if (strstr(pv_line, "PV spinlocks enabled")) return "pvqspin";
    if (hypervisor_flag == 0) return "mcs";
    if (strstr(pv_line, "PV spinlocks disabled") && !strstr(pv_line, "no host support")) return "mcs";
    return "tas";
}

static void start_region(void) {
    uint64_t hz = (uint64_t)(strtod(tsc_mhz, NULL) * 1e6);
    if (region_open(ncpus, hz, region_why, sizeof region_why))
        fail("spinlab.region=1: %s", region_why);
    region_apic_ids();
    pthread_t th;
    if (pthread_create(&th, NULL, region_clock_thread, NULL)) fail("cannot start the region's clock thread");
    // The control channel, when the host gave its port.
    struct utsname u;
    uname(&u);
    char dev[64], build_id[sizeof u.release + 8];
    snprintf(build_id, sizeof build_id, "linux %s", u.release);
    struct channel_facts facts = {hz, kernel_lock_name(), build_id, 1ull << 20};
    int fd = find_port(CONTROL_PORT_NAME, dev, sizeof dev), channel = fd >= 0;
    if (fd == -2) fail("cannot open %s (port %s)", dev, CONTROL_PORT_NAME);
    if (channel && channel_start(fd, &facts, region_why, sizeof region_why))
        fail("spinlab.region=1: the control channel: %s", region_why);
    console("region: %llu bytes, %d CPUs, generation %llu, TSC %s MHz, lock %s; control channel %s",
            (unsigned long long)region_size(), ncpus, (unsigned long long)region_generation(),
            tsc_mhz[0] ? tsc_mhz : "unknown", facts.lock, channel ? dev : "none (no port " CONTROL_PORT_NAME ")");
}

static void emit_meta(const struct probe_target *target) {
    struct utsname u;
    uname(&u);
    char uptime[64] = "";
    read_small("/proc/uptime", uptime, sizeof uptime);
    struct js j = {0};
    js_open(&j, NULL);
    js_s(&j, "agent", "spinlab-agent");
    js_i64(&j, "format", FORMAT_VERSION);
    js_s(&j, "kernel_release", u.release);
    js_s(&j, "kernel_version", u.version);
    js_s(&j, "machine", u.machine);
    js_i64(&j, "ncpus", ncpus);
    js_key(&j, "hypervisor_flag");
    js_raw(&j, hypervisor_flag < 0 ? "null" : hypervisor_flag ? "true" : "false",
           hypervisor_flag == 0 ? 5 : 4);
    js_s(&j, "pv_spinlocks_line", pv_line);
    js_s(&j, "tsc_mhz", tsc_mhz);
    js_s(&j, "workload", S.workload);
    js_f(&j, "seconds", S.seconds);
    js_b(&j, "trace", S.trace);
    js_i64(&j, "buffer_kb", S.bufkb);
    js_s(&j, "trace_clock", "x86-tsc");
    js_s(&j, "symbol", target->symbol);
    js_s(&j, "symbol_reason", target->reason);
    js_b(&j, "symbol_ftrace", target->ftrace);
    js_f(&j, "uptime_at_start_s", strtod(uptime, NULL));
    js_u64(&j, "port_wait_ns", t_port - t_start);
    js_u64(&j, "target_check_ns", t_checked - t_port);
    js_s(&j, "cmdline", cmdline);
    js_b(&j, "region", S.region);
    js_u64(&j, "region_size", region_size());
    js_close(&j);
    js_emit(&j, F_META);
}

struct window { uint64_t tsc0, tsc1, ns0, ns1; };

// The trailer: t is an open JSON object (probecost may have added to it).
static void emit_trailer(struct js *t, int cpus_sent, const struct window *w,
                         const struct workload_result *wr, const struct probe_target *target,
                         const struct probe_counts *pb, const struct probe_counts *pe,
                         const struct probe_counts *pb_stop, const struct probe_counts *pe_stop,
                         uint64_t read_ns, uint64_t agent_ns) {
    js_u64(t, "frames", out_seq);
    js_u64(t, "waits", total_waits);
    js_i64(t, "cpus", cpus_sent);
    js_open(t, "window");
    js_u64(t, "tsc_start", w->tsc0);
    js_u64(t, "tsc_end", w->tsc1);
    js_u64(t, "ns", w->ns1 - w->ns0);
    js_close(t);
    js_open(t, "workload");
    js_s(t, "name", S.workload);
    js_s(t, "unit", wr->unit ? wr->unit : "none");
    js_u64(t, "ops", wr->ops);
    js_u64(t, "failed", wr->runs_failed);
    js_u64(t, "busy_ns", wr->busy_ns);
    js_close(t);
    js_open(t, "probes");
    js_s(t, "symbol", target->symbol);
    js_s(t, "kprobes_list_flags", target->list_flags);
    js_u64(t, "begin_hits", pb->hits);
    js_u64(t, "begin_misses", pb->misses);
    js_u64(t, "end_hits", pe->hits);
    js_u64(t, "end_misses", pe->misses);
    js_u64(t, "begin_hits_at_stop", pb_stop->hits);
    js_u64(t, "end_hits_at_stop", pe_stop->hits);
    js_u64(t, "begin_hits_disarming", disarm_hits_begin);
    js_u64(t, "end_hits_disarming", disarm_hits_end);
    js_close(t);
    if (S.ab_phases) {
        js_key(t, "ab");
        js_raw(t, "[", 1);
        t->need_comma = 0;
        for (int i = 0; i < S.ab_phases; i++) {
            js_open(t, NULL);
            js_b(t, "traced", phases[i].traced);
            if (i % 2 == 0 && i / 2 < ngaps) {   // an untraced phase lies inside gap i/2
                js_u64(t, "gap_tsc_from", gaps[i / 2].from);
                js_u64(t, "gap_tsc_to", gaps[i / 2].to);
            }
            js_u64(t, "ops", phases[i].ops);
            js_u64(t, "ns", phases[i].ns);
            js_close(t);
        }
        js_raw(t, "]", 1);
        t->need_comma = 1;
    }
    js_u64(t, "read_ns", read_ns);
    js_u64(t, "agent_ns", agent_ns);
    js_close(t);
    js_emit(t, F_TRAILER);
}

// --replay [--gap FROM:TO]... FILE...: the pairing and the stream on the host, for tests. Each
// FILE is one CPU's trace text (as tracefs per_cpu/cpuN/trace prints it), each --gap a span
// of time the probes were not armed (as A/B phases leave); the stream goes to stdout.
static int replay(int n, char **files) {
    out_fd = 1;
    while (n >= 2 && !strcmp(files[0], "--gap")) {
        unsigned long long from, to;
        if (ngaps == MAX_PHASES || sscanf(files[1], "%llu:%llu", &from, &to) != 2 || to < from)
            fail("--gap %s: FROM:TO", files[1]);
        gaps[ngaps++] = (struct gap){from, to};
        files += 2;
        n -= 2;
    }
    ncpus = n;
    snprintf(S.workload, sizeof S.workload, "replay");
    struct probe_target target = {0};
    snprintf(target.symbol, sizeof target.symbol, "native_queued_spin_lock_slowpath");
    snprintf(target.reason, sizeof target.reason, "replayed from files");
    emit_meta(&target);
    struct cpu_stats cs = {0};
    for (int cpu = 0; cpu < n; cpu++) {
        memset(&cs, 0, sizeof cs);
        read_cpu_trace(cpu, files[cpu], "wait_begin", "wait_end", &cs);
        cs.entries = cs.begins + cs.ends + cs.unparsed;   // no ring buffer: every line was there
        emit_cpu(cpu, &cs);
    }
    struct js t = {0};
    js_open(&t, NULL);
    struct window w = {0};
    struct workload_result wr = {0};
    struct probe_counts p = {0};
    emit_trailer(&t, n, &w, &wr, &target, &p, &p, &p, &p, 0, 0);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    crc_init();
    if (argc >= 3 && !strcmp(argv[1], "--replay")) return replay(argc - 2, argv + 2);
    if (argc > 1) {
        fprintf(stderr, "usage: spinlab-agent (from the guest's /init; settings from /proc/cmdline)\n"
                        "       spinlab-agent --replay [--gap FROM:TO]... CPU0_TRACE [CPU1_TRACE...] > stream\n");
        return 2;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    t_start = now_ns();
    if (!stream_off()) open_port();   // spinlab.stream=0: no port; emit() sends nothing
    t_port = now_ns();
    read_settings();
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpus < 1 || ncpus > 4096) fail("%d online CPUs", ncpus);
    read_kernel_facts();
    if (S.clock) start_clock();
    if (S.region) start_region();

    int waits_mode = S.trace && strcmp(S.workload, "probecost");
    struct probe_target target = {0};
    if (waits_mode) choose_target(&target);
    t_checked = now_ns();
    emit_meta(&target);

    struct js t = {0};
    js_open(&t, NULL);
    struct workload_result wr = {0};
    struct window w = {0};
    struct probe_counts pb = {0}, pe = {0}, pb_stop = {0}, pe_stop = {0};

    if (!strcmp(S.workload, "probecost")) {
        setup_tracing(S.bufkb);
        probecost(&t);
    } else {
        if (S.trace) {
            setup_tracing(S.bufkb);
            add_probes("spinlab", "wait_begin", "wait_end", target.symbol);
            read_list_flags(&target);
            clear_trace();
            if (S.region) live_start("wait_begin", "wait_end");
        }
        if (S.go) {   // the host starts its recorders (timeline, freezes), then says go
            uint64_t g0 = now_ns();
            int c = read_host_byte(120000);
            if (c != GO_BYTE) fail(c < 0 ? "no go byte from the host within 120 s (spinlab.go=1)"
                                         : "the host sent byte %d, not the go byte", c);
            js_u64(&t, "go_wait_ns", now_ns() - g0);
        }
        if (S.seconds == 0)
            console("workload %s until the VM is stopped, tracing %s", S.workload, S.trace ? target.symbol : "off");
        else
            console("workload %s for %.1f s, tracing %s", S.workload, S.seconds, S.trace ? target.symbol : "off");
        w.ns0 = now_ns();
        w.tsc0 = __rdtsc();
        if (S.trace) {   // on in this order and off in the reverse: every hit is in the buffer
            must_write(TRACEFS "/tracing_on", "1", 0);
            if (!S.ab_phases) set_group("spinlab", 1);   // A/B: its phases arm the probes
        }
        run_workload(S.seconds, &wr);
        if (S.trace) {
            // Hits counted up to here are all in the buffer (or counted as dropped); the ones
            // between here and the probes' disarming may be counted and not recorded: the
            // kernel clears the event's trace flag before it disarms the kprobe.
            read_profile("wait_begin", &pb_stop);
            read_profile("wait_end", &pe_stop);
            set_group("spinlab", 0);
            must_write(TRACEFS "/tracing_on", "0", 0);
            if (S.region) live_stop();
        }
        w.tsc1 = __rdtsc();
        w.ns1 = now_ns();
    }

    uint64_t read0 = now_ns();
    if (waits_mode) {
        read_profile("wait_begin", &pb);
        read_profile("wait_end", &pe);
        struct cpu_stats cs;
        char path[128];
        for (int cpu = 0; cpu < ncpus; cpu++) {
            if (S.region) {   // read live: what is left in the buffer (nothing) is counted too
                cs = live[cpu].stats;
                read_cpu_stats(cpu, &cs);
            } else {
                memset(&cs, 0, sizeof cs);
                read_cpu_stats(cpu, &cs);
                snprintf(path, sizeof path, TRACEFS "/per_cpu/cpu%d/trace", cpu);
                read_cpu_trace(cpu, path, "wait_begin", "wait_end", &cs);
            }
            emit_cpu(cpu, &cs);
        }
    }
    if (!strcmp(S.workload, "gt")) {
        gt_collect(&wr);
        emit_holds();
        js_gt(&t);
    }
    if (S.clock) {
        js_open(&t, "clock");
        js_i64(&t, "cpu", clock_cpu);
        js_u64(&t, "answers", __atomic_load_n(&clock_answers, __ATOMIC_RELAXED));
        js_close(&t);
    }
    uint64_t read1 = now_ns();
    emit_trailer(&t, waits_mode ? ncpus : 0, &w, &wr, &target, &pb, &pe, &pb_stop, &pe_stop,
                 read1 - read0, now_ns() - t_start);
    if (!S.stream) {
        console("done: %llu waits (spinlab.stream=0: none sent)", (unsigned long long)total_waits);
        return 0;
    }
    if (wait_ack(20000)) {
        console("the host did not acknowledge the trailer within 20 s");
        return 2;
    }
    console("done: %llu waits sent in %u frames", (unsigned long long)total_waits, out_seq);
    return 0;
}
