// `timeline`: when each target thread ran and when it did not, from sched:sched_switch in a
// tracefs instance of our own, filtered to the threads. The instance's trace clock is x86-tsc
// by default, so the timestamps are host TSC, the clock the collector correlates with guest TSC;
// `mono` is the alternative (CLOCK_MONOTONIC ns). Both clocks are written: the other one through
// a linear map fitted from (CLOCK_MONOTONIC, TSC) pairs sampled at start and at end.
//
// Output CSV (run_intervals.h), the results' timeline.csv itself:
//   vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,start_ns,end_ns,reason,cpu
// The kernel does not emit every switch into the trace (switch_records.h: on these machines
// no switch away from some of its own tasks), so the vCPU threads' own perf switch records are
// read alongside, and every switch the trace lacks is taken from them (untraced_switches.h).
// Without perf (--no-switch-records, or perf_event_open refused: a warning) those stay
// `unknown`, bounded by the timer-interrupt running stamps. Without tracefs (an ordinary user:
// the instance cannot be created), the perf switch records alone are the timeline (a thread's
// own records, which perf_event_paranoid 2 allows); what they cannot say is in README.md
// ("Without root"). The source used is on stderr and in the ready file (`source=`).
// Given the freeze record (--freezes), the time inside each freeze's effective window is
// `frozen`; the record is read when the timeline ends, so the freezes must have ended first.
// Each off interval names the task that took the CPU and its class (preemptor_attribution.h:
// own-vcpu, neighbour-vcpu with --neighbour, hog from the ledgers of the state dir, read every
// drain so a hog that ends before the timeline is still known, freeze, host-task, unknown).
// With --vcpu-state REGION it also keeps the guest's vCPU state words (kVcpuOffPreempted,
// kVcpuOffBlocked) from the threads' switches while it runs (vcpu_state_publisher.h).
#pragma once

#include <string>

#include "hypervisor-hooks/cleanup/command_session.h"
#include "hypervisor-hooks/targets/thread_targets.h"
#include "preemptor_attribution.h"

namespace spinlab::load {

struct TimelineConfig {
    TargetSpec targets;
    std::string clock = "x86-tsc";  // x86-tsc or mono
    double duration_s = 0;          // 0: until signalled
    std::string out_csv;            // "-" or empty: stdout
    std::string raw_out;            // optional: the raw trace text as read
    int buffer_kb = 2048;           // per-CPU ring buffer of the instance
    std::string phase;              // written in every row (spinlab-run's phase), may be empty
    uint32_t rep = 0;               // written in every row (spinlab-run's repetition)
    std::string freezes;            // optional: spinlab-load freeze's record, read at the end
    bool switch_records = true;     // fill the trace's missing switches from perf's records
    std::string vcpu_state;               // optional: the region file whose vCPU state words to keep
    uint32_t vcpu_state_period_us = 1000; // how often the words' publisher reads the switches
    std::string vcpu_state_latency_json;  // optional: the words' store latencies (PublishStats) at exit
    std::vector<Neighbour> neighbours;    // --neighbour: other VMs' vCPU threads (preemptor classes)
    std::string hog_state_dir;            // the ledgers whose processes are hogs (the session's state dir)
};

// The timeline's source, as stderr, the ready file and meta.json's timeline_source name it:
// "sched_switch+perf", "sched_switch" (perf refused or off) or "perf" (no tracefs).
const char* timeline_source(bool tracefs, bool perf);

void validate_timeline(const TimelineConfig& c);
int run_timeline(Session& session, const TimelineConfig& c);

}  // namespace spinlab::load
