// From sched_switch events to "when did each thread run": per thread, alternating on-CPU and
// off-CPU intervals covering the whole tracing window [window_start, window_end].
//
// The state before a thread's first event is exact, not guessed: if its first event switches it
// out, or is a running stamp (below), it was on CPU since the window start; if it switches it
// in, it was off. (The window opens after perf's switch records start, so a switch-in the
// trace lacks before the first event is among perf's.) A thread with no event at all
// keeps the `initial_on` hint (from /proc at start) and its interval is marked "no-switch".
//
// Some switches are never in the trace: a host kernel can leave out every switch away from
// some of its own tasks (seen on these machines: no sched_switch ever has prev_comm
// tokio-rt-worker, although those threads run), and a full buffer loses events. `timeline`
// adds those from perf's switch records first (untraced_switches.h), so what follows is for
// the switches neither source has (perf refused, or lost records too). A thread then
// switches out twice with no switch-in between. It was off from the first switch-out and got
// the CPU of the second at a moment the trace does not show; that moment is after the last
// event the trace has on that CPU (any thread's: the CPU was busy with it, not with this one).
// So: off up to that last event, then `unknown` up to the second switch-out. Likewise a thread
// that switches in twice: on since the first switch-in, off at a moment the trace does not
// show: `unknown` between. Running stamps (a timer interrupt in the thread's context, about
// every 4 ms while it runs; sched_switch_parse.h) narrow both: a stamp while it is off ends the
// unknown part there (it was on from then), and in twice it was on up to its last stamp.
// Nothing is guessed; analysis counts unknown time as either.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <spinlab/preemptor.h>

#include "hostlib/results_contract.h"
#include "hypervisor-hooks/freezes/freeze_record.h"
#include "sched_switch_parse.h"

namespace spinlab::load {

struct TimelineThread {
    int tid;
    int vcpu;                        // vCPU index, or -1 when not known
    std::optional<bool> initial_on;  // hint for a thread without events
};

// The results' timeline states, "on", "off", "frozen", "unknown" (hostlib/results_contract.h).
using results::RunState;
using results::run_state_name;

struct RunInterval {
    int tid;
    int vcpu;
    RunState state;
    uint64_t start;
    uint64_t end;
    // Off intervals: the prev_state it left with ("R+" preempted, "S" sleeping, "D" frozen by
    // the v1 freezer, ...); "start" if off since the window start; "no-switch" when inferred.
    // Unknown intervals: "switch-in not traced" or "switch-out not traced".
    std::string reason;
    int cpu;  // the CPU it ran on (on intervals), else -1
    // Off intervals: the task its switch-out gave the CPU to (the sched_switch's next_pid and
    // next_comm); -1 and "" where the switch-out is not in the trace (taken from perf's records,
    // which do not name it), off since the window start, and on or unknown intervals. Classed
    // by classify_preemptors (preemptor_attribution.h), which fills the rest.
    int preemptor_pid = -1;
    std::string preemptor_comm{};
    spinlab::PreemptorClass preemptor = spinlab::PreemptorClass::kPreemptorUnknown;
    std::string preemptor_vm{};  // neighbour-vcpu: the neighbour VM's name
    int preemptor_vcpu = -1;   // own-vcpu, neighbour-vcpu: which vCPU
};

// Events must be in time order per CPU (as trace_pipe gives them); they are sorted by time
// here (stable). Events outside the window are clamped to it.
std::vector<RunInterval> build_run_intervals(const std::vector<SchedSwitch>& events,
                                             const std::vector<TimelineThread>& threads,
                                             uint64_t window_start, uint64_t window_end);

// Every part of a thread's intervals inside one of its frozen spans becomes kFrozen (split at
// the span's edges; reason and cpu kept). Inside an effective window the thread may be on CPU
// only on the kernel's path into the freezer, so `on` and `unknown` parts there become frozen
// too: the vCPU ran no guest code. Order (by tid, then start) and the tiling are kept.
std::vector<RunInterval> mark_frozen(const std::vector<RunInterval>& intervals,
                                     const std::vector<FrozenSpan>& spans);

// Where the rows belong in the results (a phase and repetition of spinlab-run); empty and 0
// when the timeline is taken on its own.
struct TimelineLabel {
    std::string phase;
    uint32_t rep = 0;
};

// The timeline CSV, the one format for a standalone timeline and the results' timeline.csv:
//   vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,start_ns,end_ns,reason,cpu,
//   preemptor,preemptor_vm,preemptor_vcpu,preemptor_pid,preemptor_comm
// preemptor is a PreemptorClass name on off, frozen and unknown rows and empty on on rows;
// preemptor_vm, preemptor_vcpu, preemptor_pid empty where they do not apply; preemptor_comm
// quoted (RFC 4180) where it holds a comma, quote or newline.
// The first seven columns are the results contract's (analysis/README.md); ns columns come
// from `to_ns` (may be empty: then they are left empty).
std::string run_intervals_csv_header();
std::string format_run_intervals_csv(const std::vector<RunInterval>& intervals, const TimelineLabel& label,
                                     const std::function<uint64_t(uint64_t)>& to_ns);

}  // namespace spinlab::load
