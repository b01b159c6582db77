// experiments/runner/window.h: the measured window of one repetition, read from the guest.
//
//   open:   reset the counters (channel), baseline snapshot (region), the first half of the
//           clock samples, the long waits so far
//   poll:   the long-wait rings every 250 ms (they hold only the last few waits per CPU), the
//           live throughput every second (for the progress line)
//   close:  end snapshot, the long waits, the second half of the clock samples; the counts are
//           end - baseline over the host's measure of baseline to end
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "clock_sync.h"
#include "guest.h"
#include "results.h"
#include "spec.h"

namespace spinlab::run {

class Window {
public:
    using Clock = std::chrono::steady_clock;

    // Opens the window; clock samples are appended to `clock_samples`.
    Window(Guest& guest, const Spec& spec, const std::string& phase, uint32_t rep,
           std::vector<collect::ClockSample>& clock_samples);

    Clock::time_point opened() const { return t0_; }
    void poll();
    // Acquisitions per second of the workload so far; negative until known.
    double live_ops_per_s() const { return live_ops_; }
    // Closes the window: the repetition's record.
    SnapshotRecord close();

private:
    void take_clock_samples(uint32_t n);

    Guest& guest_;
    const Spec& spec_;
    std::vector<collect::ClockSample>& clock_samples_;
    SnapshotRecord rec_;
    collect::Snapshot baseline_;
    collect::ClassNames names_;
    Clock::time_point t0_;
    // A failed read leaves the record without long waits rather than with half of them.
    std::vector<uint64_t> long_wait_seq_;
    LongWaits long_waits_;
    bool long_waits_ok_ = false;
    Clock::time_point last_tick_, last_poll_;
    double live_ops_ = -1;
};

}  // namespace spinlab::run
