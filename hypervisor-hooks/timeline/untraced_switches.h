// The switches of the traced threads that sched:sched_switch lacks, taken from a complete
// second source (perf's switch records, switch_records.h) already mapped onto the trace clock.
//
// The trace stays the reference wherever it has a switch (its TSC stamps and prev_state are
// what freeze's effective windows use too); the records only fill its holes. A hole shows
// in the trace alone: a thread that switches out twice with no switch-in between, or in twice
// with no switch-out. For each such pair (t1, t2) of one thread the missing switch is taken
// from the records of that thread strictly inside (t1, t2): the last switch-in for out-out,
// the first switch-out for in-in. Before a thread's first traced switch and after its last,
// the window's edges bound the search the same way (a switch-out as first traced event with a
// recorded switch-in before it: the thread was off at the start and came in then). A thread
// with no traced switch at all gets every recorded switch in the window.
//
// Added switches are SchedSwitch events with the other side unknown (-1): a switch-in has
// prev_pid -1; a switch-out has next_pid -1 and prev_state `R` (preempted, still runnable) or
// `blocked` (slept, waited or was frozen: perf does not say which). Pure: no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "sched_switch_parse.h"
#include "switch_records.h"

namespace spinlab::load {

// The "other side" of an added switch: no task is named.
inline constexpr int kUntracedPid = -1;

struct AddedSwitches {
    std::vector<SchedSwitch> events;  // to append to the traced events (any order)
    uint64_t switch_ins = 0;
    uint64_t switch_outs = 0;
};

// `traced`: the trace's events (running stamps are ignored here); `records`: switch records in
// trace-clock units, any order; `tids`: the traced threads.
AddedSwitches untraced_switches(const std::vector<SchedSwitch>& traced, const std::vector<SwitchRecord>& records,
                                const std::vector<int>& tids, uint64_t window_start, uint64_t window_end);

}  // namespace spinlab::load
