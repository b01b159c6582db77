// experiments/runner/window.cc: see window.h.
#include "window.h"

#include "trace_results.h"

namespace spinlab::run {

Window::Window(Guest& guest, const Spec& spec, const std::string& phase, uint32_t rep,
               std::vector<collect::ClockSample>& clock_samples, const std::string& results_dir,
               const std::string& trace_file)
    : guest_(guest), spec_(spec), clock_samples_(clock_samples),
      trace_path_(results_dir + "/" + trace_file), trace_file_(trace_file) {
    guest_.reset_counters();
    if (spec_.trace.enabled())
        trace_ = std::make_unique<TraceRecording>(guest_, spec_.trace.params, spec_.trace.stacks, trace_path_);
    baseline_ = guest_.snapshot();
    workload0_ = guest_.workload();
    rec_.phase = phase;
    rec_.rep = rep;
    rec_.start = {guest_.guest_tsc_now(), iso_utc(baseline_.host_ns)};
    t0_ = Clock::now();
    take_clock_samples((spec_.run.clock_samples + 1) / 2);
    names_ = guest_.class_names();
    last_tick_ = Clock::now();
}

Window::~Window() = default;

void Window::take_clock_samples(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i)
        if (auto cs = guest_.clock_sample()) clock_samples_.push_back(*cs);
}

void Window::poll() {
    if (Clock::now() - last_tick_ >= std::chrono::seconds(1)) {
        last_tick_ = Clock::now();
        collect::Snapshot now = guest_.snapshot();
        double secs = std::chrono::duration<double>(Clock::now() - t0_).count();
        std::optional<WorkloadInformation> counted = workload0_ ? guest_.workload() : std::nullopt;
        auto ops = counted ? counted_workload_ops(*workload0_, *counted, secs)
                           : workload_ops(collect::snapshot_delta(now, baseline_), names_,
                                          spec_.workload.program, spec_.workload.throughput_classes, secs);
        if (!ops.empty()) {
            live_ops_ = ops.begin()->second.ops_per_s;
            live_unit_ = ops.begin()->second.unit.empty() ? kAcquisitionsUnit : ops.begin()->second.unit;
        }
    }
}

SnapshotRecord Window::close() {
    collect::Snapshot end = guest_.snapshot();
    const auto t1 = Clock::now();
    const std::optional<WorkloadInformation> workload1 = workload0_ ? guest_.workload() : std::nullopt;
    rec_.end = {guest_.guest_tsc_now(), iso_utc(end.host_ns)};
    names_ = guest_.class_names();
    rec_.names = names_;
    if (trace_) {
        // Stopped after the end snapshot: a wait counted before it is released (and written)
        // before the stop.
        trace_->stop();
        trace_.reset();
        LongWaits lw;
        lw.min_cycles = guest_.configuration().long_wait_threshold;
        rec_.trace = read_trace_file(trace_path_, trace_file_, names_, &lw);
        if (rec_.trace->session.enable_flags & kTraceGroupLongWait) rec_.long_waits = lw;
    }
    take_clock_samples(spec_.run.clock_samples / 2);
    rec_.counters = collect::snapshot_delta(end, baseline_);
    // The host's clock measures the window the counters cover (baseline to end reading); the
    // guest's publications in start/end lag it by up to a publication period.
    rec_.duration_s = std::chrono::duration<double>(t1 - t0_).count();
    rec_.workload = workload1 ? counted_workload_ops(*workload0_, *workload1, rec_.duration_s)
                              : workload_ops(rec_.counters, names_, spec_.workload.program,
                                             spec_.workload.throughput_classes, rec_.duration_s);
    return rec_;
}

}  // namespace spinlab::run
