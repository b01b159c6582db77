// vm-images/linux/guest/channel.cc: see channel.h. The server loop is the kernel's
// (kern/channel_device.cc) on a file descriptor: bytes in, the decoder and the handler on this
// thread, an unfinished frame dropped after 200 ms of silence.
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel/channel_server.h"
#include "region.h"
#include "trace.h"
#include "sysinfo/memory_buffer.h"
#include "sysinfo/sysinfo_handler.h"

namespace {

namespace si = spinlab::sysinfo;

constexpr int kIdleMs = 200;     // a frame not finished within this is dropped (as the kernel)
constexpr int kIdleStepMs = 5;

int fd = -1;
spinlab::ChannelServer server;
spinlab::SystemConfiguration config;
spinlab::LockClassEntry classes[1];
spinlab::CpuPerfData* cpus[spinlab::kRegionMaxCpus];
spinlab::lockstat::SpinlockParams params = spinlab::lockstat::kDefaultSpinlockParams;  // unused
si::Context ctx;

void send(void*, const uint8_t* bytes, uint32_t n) {
    while (n) {
        ssize_t w = write(fd, bytes, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;  // the host went away: the next request starts over
        bytes += w;
        n -= uint32_t(w);
    }
}

uint32_t handle(void*, spinlab::FrameOp op, uint32_t cls, uint32_t, uint8_t* buf, uint32_t len,
                uint32_t* ret_len) {
    // The four sampling parameters (the class's sub-class kEventTraceSpinlockInformation) are
    // spinlab's kernel's: a Linux guest has none, so that sub-class is one this guest does not
    // serve. Trace sessions are served (trace.cc) when the region has a trace area; call-stack
    // settings are not (ctx.stacks_set null: kInvalidInfoClass, which the host's tools accept
    // for a start that asks for no stacks).
    if (cls == uint32_t(spinlab::InfoClass::kSystemPerformanceTraceInformation)) {
        uint32_t sub = 0;
        if (len >= sizeof sub) memcpy(&sub, buf, sizeof sub);
        if (sub == uint32_t(spinlab::EventTraceInformationClass::kEventTraceSpinlockInformation) ||
            !ctx.trace_control)
            return uint32_t(spinlab::Status::kInvalidInfoClass);
    }
    si::MemoryBufferState state{buf, len};
    si::Buffer b = si::memory_buffer(state);
    if (op == spinlab::FrameOp::kSet)
        return uint32_t(si::set_system_information(cls, b, /*privileged=*/true, ctx, ret_len));
    return uint32_t(si::query_system_information(cls, b, ctx, ret_len));
}

void* server_main(void*) {
    uint8_t chunk[4096];
    int idle_ms = 0;
    for (;;) {
        const bool partial = server.decoder.fill > 0;
        pollfd p{fd, POLLIN, 0};
        int r = poll(&p, 1, partial ? kIdleStepMs : 1000);
        if (r < 0 && errno != EINTR) return nullptr;
        if (r > 0 && (p.revents & POLLIN)) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n > 0) {
                spinlab::channel_server_receive(&server, chunk, size_t(n));
                idle_ms = 0;
                continue;
            }
        } else if (r > 0 && (p.revents & POLLHUP)) {
            usleep(100000);  // no host end connected: nothing to read until one is
        }
        if (partial && (idle_ms += kIdleStepMs) >= kIdleMs) {
            spinlab::channel_server_idle(&server);
            idle_ms = 0;
        }
    }
}

// CPUID leaf 0x40000000's vendor text and 0x40000001's KVM feature and hint words.
void hypervisor_cpuid(spinlab::SystemConfiguration& c) {
    uint32_t a, b, cx, d;
    asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(cx), "=d"(d) : "a"(1), "c"(0));
    if (!(cx & (1u << 31))) return;  // no hypervisor bit: no leaf 0x40000000 to trust
    asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(cx), "=d"(d) : "a"(0x40000000), "c"(0));
    char sig[13];
    memcpy(sig, &b, 4);
    memcpy(sig + 4, &cx, 4);
    memcpy(sig + 8, &d, 4);
    sig[12] = 0;
    snprintf(c.hypervisor_signature, sizeof c.hypervisor_signature, "%s", sig);
    if (!strcmp(sig, "KVMKVMKVM") && a >= 0x40000001) {
        asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(cx), "=d"(d) : "a"(0x40000001), "c"(0));
        c.kvm_features = a;
        c.kvm_hints = d;
    }
}

}  // namespace

extern "C" int channel_start(int port_fd, const channel_facts* f, char* why, size_t why_size) {
    const int ncpus = region_cpus();
    if (ncpus <= 0) {
        snprintf(why, why_size, "the control channel needs the region (spinlab.region=1)");
        return -1;
    }
    int lock = -1;
    for (const spinlab::EnumName& e : spinlab::kLockAlgorithmNames)
        if (!strcmp(e.name, f->lock)) lock = int(e.value);
    if (lock < 0) {
        snprintf(why, why_size, "lock '%s' is not one of the ABI's lock names", f->lock);
        return -1;
    }
    fd = port_fd;
    config.tsc_hz = f->tsc_hz;
    config.lock_algorithm = uint32_t(lock);
    config.clock_source = uint32_t(spinlab::ClockSource::kLfenceRdtsc);  // trace_clock x86-tsc
    config.instrument_level = uint32_t(spinlab::InstrumentLevel::kCounters);  // no hold timing
    config.pause_enabled = 1;  // Linux spins with cpu_relax(): pause
    config.steal_time = 0;     // the agent reads no steal time: every wait's LHP class is unknown
    hypervisor_cpuid(config);
    config.long_wait_threshold = f->long_wait_threshold;
    snprintf(config.build_id, sizeof config.build_id, "%s", f->build_id);
    classes[0].id = 0;
    classes[0].lock_count = 0;  // not known: every spinlock of the kernel
    snprintf(classes[0].name, sizeof classes[0].name, "%s", "spinlock_slowpath");
    for (int i = 0; i < ncpus; i++) cpus[i] = static_cast<spinlab::CpuPerfData*>(region_cpu_perf(i));
    ctx.cpus = cpus;
    ctx.cpu_count = uint32_t(ncpus);
    ctx.classes = classes;
    ctx.class_count = 1;
    ctx.config = &config;
    ctx.params = &params;
    ctx.reset = [](void*, uint32_t cpu, uint32_t lock_class) { region_reset(int(cpu), lock_class); };
    // The workload's own count of its operations: the host's throughput of a Linux guest.
    ctx.workload_query = [](void*, spinlab::WorkloadInformation* out) {
        channel_workload w{};
        agent_workload(&w);
        snprintf(out->name, sizeof out->name, "%s", w.name ? w.name : "");
        snprintf(out->unit, sizeof out->unit, "%s", w.unit ? w.unit : "");
        out->ops = w.ops;
        out->failed = w.failed;
        uint32_t lo, hi;
        asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
        out->guest_tsc = (uint64_t(hi) << 32) | lo;
    };
    if (trace_init(&config, uint32_t(ncpus))) {
        ctx.trace_control = [](void*, const spinlab::TraceSessionInformation& in) { return trace_control(in); };
        ctx.trace_query = [](void*, spinlab::TraceSessionInformation* out) { trace_query(out); };
    }

    static uint8_t in[spinlab::kFrameHeaderSize + spinlab::kMaxRequestPayload];
    const uint32_t out_cap = spinlab::kFrameHeaderSize + spinlab::kMaxPayload;
    auto* out = static_cast<uint8_t*>(malloc(out_cap));
    auto* stats = static_cast<spinlab::ChannelServerStats*>(region_channel_stats());
    if (!out || !stats ||
        !spinlab::channel_server_init(&server, in, sizeof in, out, out_cap, handle, nullptr, send,
                                      nullptr, stats)) {
        snprintf(why, why_size, "cannot set up the channel server");
        return -1;
    }
    pthread_t t;
    if (pthread_create(&t, nullptr, server_main, nullptr)) {
        snprintf(why, why_size, "cannot start the channel's thread");
        return -1;
    }
    return 0;
}
