// collector/clock_sampler.h: clock samples taken throughout a run, on a thread of their own.
//
// The guest's TSC offset can change while the run goes on (clock_sync.h), so samples only at
// the ends of a window are not enough; under TCG it moves in steps, and a bound set by the
// brackets needs samples close together (issue 52: a 10 ms spacing leaves most segments with
// no step at all). The sampler maps the region itself (its own reader, nothing shared with the
// caller's) and takes one bracketed sample about every `interval`.
//
// A bracket is narrow only if this thread spins at the instant of publication, and every
// microsecond it spins is taken from a vCPU (on a host with no idle CPU). So it spins only
// across the publication it expects, no longer:
//   - PublicationForecast keeps the phase of the guest's publications (every period_us, which
//     the guest states, checked to be 1 us..1 s) and how far recent ones came from where they
//     were expected; the sampler wakes `lead` before the expected one and gives up `lead`
//     after it. The lead follows those errors (100 us to 1.5 ms). Until the phase is known (at
//     the start, or after misses in a row) it spins across one whole period to find it.
//   - Given the VM's vCPU threads, before each spin it moves off the host CPU that the
//     publishing vCPU's thread last ran on, so that it does not hold up the publication it
//     waits for.
// Publications that carry a reference clock (the HPET; clock_reference.h) are also read by a
// second thread at the lowest priority, every third of a period, never spinning, beside the
// host's CLOCK_MONOTONIC;
// each is then a sample of its own, placed through the reference, and the spins (every
// kRefSpinInterval once references come) only calibrate it.
// A publication that fails its checks ends the sampling (error() says why); the samples before
// it stay. spun() says how long the thread spun, the cost to the workload's host CPUs.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clock_reference.h"
#include "clock_sync.h"

namespace spinlab::collect {

class RegionReader;

// When the guest's next clock publication is expected. Pure (tested on its own).
class PublicationForecast {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::microseconds kMinLead{100}, kMaxLead{1500};

    bool known() const { return known_; }
    // The first expected publication at or after t (known() must be true).
    Clock::time_point next_after(Clock::time_point t) const;
    // How early to wake before an expected publication, and how long after it to give up.
    std::chrono::microseconds lead() const;

    // A publication was seen at `at`; `expected` is where it was forecast (nullptr: none was).
    void seen(Clock::time_point at, const Clock::time_point* expected, Clock::duration period);
    // The expected publication did not come within the lead; after kMissesToForget of these in
    // a row the phase is forgotten.
    void missed();
    static constexpr int kMissesToForget = 2;

private:
    bool known_ = false;
    Clock::time_point last_{};
    Clock::duration period_{};
    std::deque<Clock::duration> errors_;  // |seen - expected| of the latest forecasts
    int misses_in_a_row_ = 0;
};

class ClockSampler {
public:
    // Starts sampling the region file at `path` (throws CollectError as RegionReader does).
    // vcpu_tids: the VM's vCPU threads by guest CPU, or empty (no CPU is avoided).
    ClockSampler(const std::string& path, std::chrono::milliseconds interval,
                 std::vector<uint64_t> vcpu_tids = {});
    ~ClockSampler();  // stops
    ClockSampler(const ClockSampler&) = delete;
    ClockSampler& operator=(const ClockSampler&) = delete;

    // Spins this far apart once publications carry a reference (they only calibrate it).
    static constexpr std::chrono::milliseconds kRefSpinInterval{500};

    void stop();
    // Every sample so far: with a calibrated reference, every publication read, placed through
    // it (the bracketed ones only calibrate it: clock_reference.h); else the bracketed ones.
    std::vector<ClockSample> samples() const;

    // The publications' reference clock: what was read, and how it placed them.
    struct Reference {
        std::string source = "none";  // clock_reference_name of the last publication read
        size_t readings = 0;          // publications read with a reference
        size_t placed = 0;            // of them placed as samples (0 without a calibration)
        RefCalibration calibration;
    };
    Reference reference() const;
    size_t missed() const { return missed_.load(); }  // attempts that saw no publication
    std::chrono::nanoseconds spun() const { return std::chrono::nanoseconds(spun_ns_.load()); }
    // Why sampling stopped early ("" while it runs or after stop()): the guest's clock
    // publication failed its checks (a corrupt region, RegionReader::clock). The samples taken
    // before are kept.
    std::string error() const;

private:
    using Clock = std::chrono::steady_clock;
    void run(const char* name, int nice, const std::function<void()>& body);  // a thread's body
    void spin_until_stopped(std::chrono::milliseconds interval);
    void read_until_stopped();
    // The reference's calibration and the publications placed through it (mu_ held).
    struct Placement {
        RefCalibration calibration;
        std::vector<ClockSample> placed;
    };
    Placement placement() const;
    // One spin across the expected publication (or a whole period while the phase is unknown).
    void spin_once(PublicationForecast& forecast, std::optional<Clock::time_point> expected,
                   Clock::duration period);
    // The latest publication, kept when it is new and carries a reference; a host clock pair.
    // Returns the publication period.
    std::chrono::microseconds read_publication();
    void avoid_publisher(uint32_t guest_cpu);
    void sleep_until(Clock::time_point t);

    std::unique_ptr<RegionReader> reader_;        // the spinning thread's
    std::unique_ptr<RegionReader> dense_reader_;  // the dense reader's (a reader is one thread's)
    std::vector<uint64_t> vcpu_tids_;
    mutable std::mutex mu_;
    std::vector<ClockSample> samples_;      // bracketed
    std::vector<BracketedRef> bracketed_refs_;  // of them, those whose publication had a reference
    std::vector<RefReading> readings_;
    std::vector<HostClockPair> host_pairs_;
    std::string ref_source_ = "none";
    uint64_t last_seq_ = 0;
    Clock::time_point last_sample_{};
    std::string error_;
    std::atomic<bool> stop_{false};
    std::atomic<size_t> missed_{0};
    std::atomic<int64_t> spun_ns_{0};
    std::thread thread_;        // spins across a publication now and then ("spinlab-clock")
    std::thread dense_thread_;  // reads every publication's reference ("spinlab-clockref")
};

}  // namespace spinlab::collect
