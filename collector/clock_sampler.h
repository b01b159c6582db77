// collector/clock_sampler.h: clock samples taken throughout a run, on a thread of their own.
//
// The guest's TSC offset can change while the run goes on (clock_sync.h), so samples only at
// the ends of a window are not enough. The sampler maps the region itself (its own reader,
// nothing shared with the caller's) and takes one bracketed sample about every `interval`.
// A bracket is narrow only if this thread runs at the instant of publication; on a loaded
// host a thread that spins for a whole publication period is likely to be descheduled in the
// middle, so it sleeps until shortly before the next expected publication (the guest states
// its period, checked to be 1 us..1 s) and spins only across it. A publication that fails its
// checks ends the sampling (error() says why); the samples before it stay.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clock_sync.h"

namespace spinlab::collect {

class RegionReader;

class ClockSampler {
public:
    // Starts sampling the region file at `path` (throws CollectError as RegionReader does).
    ClockSampler(const std::string& path, std::chrono::milliseconds interval);
    ~ClockSampler();  // stops
    ClockSampler(const ClockSampler&) = delete;
    ClockSampler& operator=(const ClockSampler&) = delete;

    void stop();
    std::vector<ClockSample> samples() const;  // every sample so far, in order
    size_t missed() const { return missed_.load(); }  // attempts that saw no publication
    // Why sampling stopped early ("" while it runs or after stop()): the guest's clock
    // publication failed its checks (a corrupt region, RegionReader::clock). The samples taken
    // before are kept.
    std::string error() const;

private:
    void run(std::chrono::milliseconds interval);
    void sample_until_stopped(std::chrono::milliseconds interval);

    std::unique_ptr<RegionReader> reader_;
    mutable std::mutex mu_;
    std::vector<ClockSample> samples_;
    std::string error_;
    std::atomic<bool> stop_{false};
    std::atomic<size_t> missed_{0};
    std::thread thread_;
};

}  // namespace spinlab::collect
