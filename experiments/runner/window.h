// experiments/runner/window.h: the measured window of one repetition, read from the guest.
//
//   open:   reset the counters (channel), start the trace session ([trace]; its file beside the
//           snapshot, drained by TraceRecording's thread), baseline snapshot (region), the first
//           half of the clock samples
//   poll:   the live throughput every second (for the progress line)
//   close:  end snapshot, stop the trace session, the second half of the clock samples; the
//           counts are end - baseline over the host's measure of baseline to end; the long
//           waits and the trace's loss counters come from the trace file
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "clock_sync.h"
#include "progress.h"
#include "guest.h"
#include "results.h"
#include "spec.h"
#include "trace_recording.h"

namespace spinlab::run {

class Window {
public:
    using Clock = std::chrono::steady_clock;

    // Opens the window; clock samples are appended to `clock_samples`. With a trace, its file is
    // `results_dir`/`trace_file`.
    Window(Guest& guest, const Spec& spec, const std::string& phase, uint32_t rep,
           std::vector<collect::ClockSample>& clock_samples, const std::string& results_dir,
           const std::string& trace_file);
    ~Window();

    Clock::time_point opened() const { return t0_; }
    void poll();
    // The workload's operations per second so far (its classes' acquisitions, or what the guest
    // counts itself); negative until known.
    double live_ops_per_s() const { return live_ops_; }
    // What one of those operations is: "acq" for acquisitions, else the guest's own unit
    // ("hackbench runs").
    const std::string& live_unit() const { return live_unit_; }
    // Closes the window: the repetition's record.
    SnapshotRecord close();

private:
    void take_clock_samples(uint32_t n);

    Guest& guest_;
    const Spec& spec_;
    std::vector<collect::ClockSample>& clock_samples_;
    SnapshotRecord rec_;
    collect::Snapshot baseline_;
    std::optional<WorkloadInformation> workload0_;  // the guest's own count at the baseline
    collect::ClassNames names_;
    Clock::time_point t0_;
    std::string trace_path_, trace_file_;
    std::unique_ptr<TraceRecording> trace_;
    Clock::time_point last_tick_;
    double live_ops_ = -1;
    std::string live_unit_ = kAcquisitionsUnit;
};

}  // namespace spinlab::run
