// collector/testing/fake_guest.h: a host process that looks like a running spinlab guest to
// spinlab-collect, for integration tests and benchmarks without QEMU:
//   - a shared region file laid out by region_layout(), one CpuPerfData per "CPU";
//   - one worker thread per CPU hammering real instrumented locks (lockstat's lock_acquire /
//     lock_release over spinlock/'s algorithms), so counters grow as in a guest;
//   - a clock publisher writing the host TSC into the region's ClockArea (a guest TSC that
//     equals the host's: offset 0, drift 0, which the tests check);
//   - the real channel server (channel/channel_server.h) over a UNIX socket, one client at a
//     time like a QEMU chardev, answering with the real sysinfo handler (sysinfo/sysinfo_handler.h).
#pragma once
#include <spinlab/sysinfo.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace spinlab::testing {

struct FakeGuestOptions {
    std::string socket_path;
    std::string shm_path;
    uint32_t cpus = 2;
    uint32_t locks = 2;                  // workload locks ("bench0".."benchN-1"), shared by all
    LockAlgorithm algorithm = LockAlgorithm::kTestAndSet;
    uint32_t critical_cycles = 200;      // busy work inside the lock
    uint32_t think_cycles = 200;         // busy work between acquisitions
    uint64_t run_ms = 0;                 // workers stop (quiesce) after this; 0 = until stop()
    uint32_t publish_us = 1000;          // clock publication period; 0 = never publish
    uint32_t deaf_connections = 0;       // the first N channel connections are read and never
                                         // answered: a guest whose channel handler is not running yet
};

class FakeGuest {
public:
    explicit FakeGuest(const FakeGuestOptions& o);  // throws std::runtime_error on setup failure
    ~FakeGuest();                                   // stops everything, removes socket and file
    FakeGuest(const FakeGuest&) = delete;
    FakeGuest& operator=(const FakeGuest&) = delete;

    // Acquisitions the workers made so far (exact, counted by the workers themselves).
    uint64_t acquisitions() const;
    // Whether the workers have stopped (run_ms elapsed).
    bool quiescent() const;
    // Blocks until the workers stopped (run_ms must be set).
    void wait_quiescent();
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace spinlab::testing
