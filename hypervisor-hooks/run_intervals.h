// From sched_switch events to "when did each thread run": per thread, alternating on-CPU and
// off-CPU intervals covering the whole tracing window [window_start, window_end].
//
// The state before a thread's first event is exact, not guessed: if its first event switches it
// out, it was on CPU since the window start, and vice versa. A thread with no event at all
// keeps the `initial_on` hint (from /proc at start) and its interval is marked "no-switch".
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sched_switch_parse.h"

namespace spinlab::load {

struct TimelineThread {
    int tid;
    int vcpu;                        // vCPU index, or -1 when not known
    std::optional<bool> initial_on;  // hint for a thread without events
};

struct RunInterval {
    int tid;
    int vcpu;
    bool on;
    uint64_t start;
    uint64_t end;
    // Off intervals: the prev_state it left with ("R+" preempted, "S" sleeping, "D" frozen by
    // the v1 freezer, ...); "start" if off since the window start; "no-switch" when inferred.
    std::string reason;
    int cpu;  // the CPU it ran on (on intervals), else -1
};

// Events must be in time order per CPU (as trace_pipe gives them); they are sorted by time
// here (stable). Events outside the window are clamped to it.
std::vector<RunInterval> build_run_intervals(const std::vector<SchedSwitch>& events,
                                             const std::vector<TimelineThread>& threads,
                                             uint64_t window_start, uint64_t window_end);

// CSV with header "tid,vcpu,state,start_tsc,end_tsc,start_ns,end_ns,reason,cpu"; ns columns
// come from `to_ns` (may be empty: then they are left empty).
std::string format_run_intervals_csv(const std::vector<RunInterval>& intervals,
                                     const std::function<uint64_t(uint64_t)>& to_ns);

}  // namespace spinlab::load
