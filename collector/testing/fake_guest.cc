// collector/testing/fake_guest.cc: see fake_guest.h.
#include "fake_guest.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "channel/channel_server.h"
#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "host_cpu_env.h"
#include "lockstat/instrumented_lock.h"
#include "sysinfo/memory_buffer.h"
#include "sysinfo/sysinfo_handler.h"

namespace spinlab::testing {
namespace {

constexpr uint64_t kLongWaitThreshold = 1ull << 22;  // architecture.md: 2^22 separates LHP
constexpr uint64_t kTraceBytes = 64 * 1024;

void busy_cycles(uint32_t cycles) {
    uint64_t end = lockstat::LfenceRdtsc::now() + cycles;
    while (lockstat::LfenceRdtsc::now() < end) _mm_pause();
}

uint64_t measure_tsc_hz() {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = lockstat::LfenceRdtsc::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t c1 = lockstat::LfenceRdtsc::now();
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - t0).count();
    return uint64_t(double(c1 - c0) * 1e9 / double(ns));
}

uint64_t round_up_pow2(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

}  // namespace

struct FakeGuest::Impl {
    FakeGuestOptions opt;
    int shm_fd = -1;
    uint8_t* region = nullptr;
    uint64_t region_size = 0;
    RegionLayout layout{};

    std::vector<spinlock::Lock> locks;
    std::vector<LockClassEntry> classes;
    std::vector<CpuPerfData*> cpu_ptrs;
    lockstat::SpinlockParams params = lockstat::kDefaultSpinlockParams;
    SystemConfiguration config{};
    sysinfo::Context ctx{};

    // Per worker: acquisitions made (written by that worker only) and a pending reset
    // (0: none; else lock class + 1, or kAllLockClasses), the fake guest's "IPI".
    struct alignas(64) WorkerState {
        std::atomic<uint64_t> acquisitions{0};
        std::atomic<uint64_t> reset_request{0};
        std::atomic<bool> running{false};
    };
    std::vector<WorkerState> workers;
    std::vector<std::thread> threads;
    std::atomic<bool> stop_workers{false};
    std::atomic<bool> stop_all{false};
    std::atomic<uint32_t> running_workers{0};

    int listen_fd = -1;
    int conn_fd = -1;
    std::vector<uint8_t> decoder_storage, out_storage;
    ChannelServer server{};

    void setup_region() {
        region_size = round_up_pow2(region_size_needed(opt.cpus, kTraceBytes));
        shm_fd = ::open(opt.shm_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (shm_fd < 0) throw std::runtime_error("cannot create " + opt.shm_path + ": " + strerror(errno));
        if (::ftruncate(shm_fd, off_t(region_size)) != 0)
            throw std::runtime_error("cannot size " + opt.shm_path);
        void* p = ::mmap(nullptr, region_size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
        if (p == MAP_FAILED) throw std::runtime_error("cannot map " + opt.shm_path);
        region = static_cast<uint8_t*>(p);
        config.tsc_hz = measure_tsc_hz();
        if (region_layout(region, region_size, opt.cpus, config.tsc_hz,
                          lockstat::LfenceRdtsc::now()) != RegionError::kNone ||
            region_parse(region, region_size, &layout) != RegionError::kNone)
            throw std::runtime_error("cannot lay out the region in " + opt.shm_path);
        for (uint32_t k = 0; k < opt.cpus; ++k)
            cpu_ptrs.push_back(const_cast<CpuPerfData*>(region_cpu(region, layout, k)));
    }

    void setup_locks() {
        locks.resize(opt.locks);
        classes.resize(opt.locks);
        for (uint32_t i = 0; i < opt.locks; ++i) {
            classes[i] = LockClassEntry{};
            classes[i].id = i;
            classes[i].lock_count = 1;
            std::snprintf(classes[i].name, sizeof classes[i].name, "bench%u", i);
            spinlock::lock_init(locks[i], classes[i].name, i);
        }
    }

    void setup_context() {
        config.abi_version = kSysinfoAbiVersion;
        config.lock_algorithm = uint32_t(opt.algorithm);
        config.clock_source = uint32_t(ClockSource::kLfenceRdtsc);
        config.instrument_level = uint32_t(InstrumentLevel::kFull);
        config.pause_enabled = 1;
        config.long_wait_threshold = kLongWaitThreshold;
        std::snprintf(config.build_id, sizeof config.build_id, "fake-guest");
        ctx.cpus = cpu_ptrs.data();
        ctx.cpu_count = opt.cpus;
        ctx.classes = classes.data();
        ctx.class_count = opt.locks;
        ctx.config = &config;
        ctx.params = &params;
        ctx.reset = &Impl::reset_cpu;
        ctx.reset_arg = this;
    }

    // sysinfo's reset callback: the owning worker resets its own counters between two
    // acquisitions, as the kernel does on the owning CPU; a stopped worker's CPU is quiescent.
    static void reset_cpu(void* arg, uint32_t cpu, uint32_t lock_class) {
        auto* self = static_cast<Impl*>(arg);
        WorkerState& w = self->workers[cpu];
        uint64_t req = lock_class == kAllLockClasses ? kAllLockClasses : uint64_t(lock_class) + 1;
        w.reset_request.store(req);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (w.reset_request.load() != 0) {
            if (!w.running.load()) {
                uint64_t mine = req;  // the worker is gone: do it here, once
                if (w.reset_request.compare_exchange_strong(mine, 0))
                    lockstat::reset_cpu_perf(*self->cpu_ptrs[cpu], lock_class);
                break;
            }
            if (std::chrono::steady_clock::now() > deadline) break;
            std::this_thread::yield();
        }
    }

    void worker(uint32_t cpu) {
        WorkerState& w = workers[cpu];
        CpuPerfData& p = *cpu_ptrs[cpu];
        lockstat::init_cpu_perf(p, cpu, params.acquire_sample_rate);
        HostCpuEnv env{cpu, opt.algorithm, &p, &params};
        spinlock::McsNode node{};
        uint64_t i = cpu;
        while (!stop_workers.load(std::memory_order_relaxed)) {
            if (uint64_t r = w.reset_request.load(std::memory_order_acquire)) {
                lockstat::reset_cpu_perf(p, r == kAllLockClasses ? kAllLockClasses : uint32_t(r - 1));
                w.reset_request.store(0, std::memory_order_release);
            }
            spinlock::Lock& l = locks[i++ % locks.size()];
            lockstat::lock_acquire<InstrumentLevel::kFull>(l, &node, env);
            busy_cycles(opt.critical_cycles);
            lockstat::lock_release<InstrumentLevel::kFull>(l, env);
            w.acquisitions.store(w.acquisitions.load(std::memory_order_relaxed) + 1,
                                 std::memory_order_relaxed);
            busy_cycles(opt.think_cycles);
        }
        // Answer a reset that raced with the stop.
        if (uint64_t r = w.reset_request.exchange(0))
            lockstat::reset_cpu_perf(p, r == kAllLockClasses ? kAllLockClasses : uint32_t(r - 1));
        w.running.store(false);
        running_workers.fetch_sub(1);
    }

    void publisher() {
        auto* area = reinterpret_cast<ClockArea*>(region + layout.section(RegionSection::kClock).offset);
        while (!stop_all.load()) {
            clock_publish(area, lockstat::LfenceRdtsc::now(), 0, opt.publish_us);
            std::this_thread::sleep_for(std::chrono::microseconds(opt.publish_us));
        }
    }

    static uint32_t handle(void* arg, FrameOp op, uint32_t info_class, uint32_t, uint8_t* buf,
                           uint32_t length, uint32_t* return_length) {
        auto* self = static_cast<Impl*>(arg);
        sysinfo::MemoryBufferState st{buf, length};
        sysinfo::Buffer b = sysinfo::memory_buffer(st);
        Status s = op == FrameOp::kQuery
                       ? sysinfo::query_system_information(info_class, b, self->ctx, return_length)
                       : sysinfo::set_system_information(info_class, b, /*privileged=*/true,
                                                         self->ctx, return_length);
        return uint32_t(s);
    }

    static void send(void* arg, const uint8_t* p, uint32_t n) {
        auto* self = static_cast<Impl*>(arg);
        while (n > 0 && self->conn_fd >= 0) {
            ssize_t w = ::send(self->conn_fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;  // the host went away; the next accept starts afresh
            p += w;
            n -= uint32_t(w);
        }
    }

    void setup_socket() {
        decoder_storage.resize(kFrameHeaderSize + kMaxRequestPayload);
        out_storage.resize(kFrameHeaderSize + kMaxPayload);
        auto* stats = reinterpret_cast<ChannelServerStats*>(
            region + layout.section(RegionSection::kChannelStats).offset);
        if (!channel_server_init(&server, decoder_storage.data(), uint32_t(decoder_storage.size()),
                                 out_storage.data(), uint32_t(out_storage.size()), &Impl::handle,
                                 this, &Impl::send, this, stats))
            throw std::runtime_error("channel server init failed");
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (opt.socket_path.size() >= sizeof addr.sun_path)
            throw std::runtime_error("socket path too long: " + opt.socket_path);
        std::strcpy(addr.sun_path, opt.socket_path.c_str());
        ::unlink(opt.socket_path.c_str());
        listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || ::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listen_fd, 4) != 0)
            throw std::runtime_error("cannot listen on " + opt.socket_path + ": " + strerror(errno));
    }

    uint32_t deaf_left = 0;  // FakeGuestOptions::deaf_connections not yet accepted

    // One client at a time, like a QEMU chardev socket server.
    void serve() {
        std::vector<uint8_t> buf(4096);
        while (!stop_all.load()) {
            pollfd lp{listen_fd, POLLIN, 0};
            if (::poll(&lp, 1, 100) <= 0) continue;
            conn_fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (conn_fd < 0) continue;
            const bool deaf = deaf_left > 0;
            if (deaf) deaf_left--;
            while (!stop_all.load()) {
                pollfd cp{conn_fd, POLLIN, 0};
                int r = ::poll(&cp, 1, 200);
                if (r == 0) {
                    channel_server_idle(&server);  // a frame left unfinished for 200 ms
                    continue;
                }
                ssize_t n = ::recv(conn_fd, buf.data(), buf.size(), 0);
                if (n <= 0) break;
                if (!deaf) channel_server_receive(&server, buf.data(), size_t(n));
            }
            channel_server_idle(&server);
            ::close(conn_fd);
            conn_fd = -1;
        }
    }
};

FakeGuest::FakeGuest(const FakeGuestOptions& o) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.opt = o;
    m.deaf_left = o.deaf_connections;
    if (o.cpus == 0 || o.cpus > kRegionMaxCpus) throw std::runtime_error("--cpus must be 1..64");
    if (o.locks == 0 || o.locks > kMaxLockClasses) throw std::runtime_error("--locks must be 1..32");
    m.setup_region();
    m.setup_locks();
    m.setup_context();
    m.config.cpu_count = o.cpus;
    m.setup_socket();
    m.workers = std::vector<Impl::WorkerState>(o.cpus);
    m.running_workers = o.cpus;
    for (uint32_t k = 0; k < o.cpus; ++k) {
        m.workers[k].running = true;
        m.threads.emplace_back([&m, k] { m.worker(k); });
    }
    if (o.publish_us) m.threads.emplace_back([&m] { m.publisher(); });
    m.threads.emplace_back([&m] { m.serve(); });
    if (o.run_ms)
        m.threads.emplace_back([&m] {
            auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(m.opt.run_ms);
            while (!m.stop_all.load() && std::chrono::steady_clock::now() < end)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            m.stop_workers.store(true);
        });
}

FakeGuest::~FakeGuest() {
    stop();
    for (std::thread& t : impl_->threads) t.join();
    if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
    ::unlink(impl_->opt.socket_path.c_str());
    if (impl_->region) ::munmap(impl_->region, impl_->region_size);
    if (impl_->shm_fd >= 0) ::close(impl_->shm_fd);
    ::unlink(impl_->opt.shm_path.c_str());
}

uint64_t FakeGuest::acquisitions() const {
    uint64_t n = 0;
    for (const auto& w : impl_->workers) n += w.acquisitions.load();
    return n;
}

bool FakeGuest::quiescent() const { return impl_->running_workers.load() == 0; }

void FakeGuest::wait_quiescent() {
    while (!quiescent()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void FakeGuest::stop() {
    impl_->stop_workers.store(true);
    impl_->stop_all.store(true);
}

}  // namespace spinlab::testing
