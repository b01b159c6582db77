// `preempt`: deterministic lock-holder preemption. Each target thread gets a cgroup of its own
// (v1 freezer, or a v2 threaded cgroup's cgroup.freeze) and is frozen for the windows its
// FreezeSchedule gives, from a common origin (optionally staggered across threads).
//
// Every window is written to the CSV as it ends (so a SIGKILL loses at most the open one):
//   seq,tid,vcpu,planned_ns,begin_ns,begin_tsc,frozen_ns,frozen_tsc,end_ns,end_tsc
// begin_* is taken just before the freeze request, frozen_* when the kernel first reports the
// cgroup frozen (0 if it did not within 5 ms), end_* just after the thaw request returned.
// All *_ns are CLOCK_MONOTONIC, *_tsc the host TSC.
#pragma once

#include <string>

#include "freeze_schedule.h"
#include "session.h"
#include "thread_cgroup.h"
#include "thread_targets.h"

namespace spinlab::load {

struct PreemptConfig {
    TargetSpec targets;
    CgroupMethod method = CgroupMethod::kAuto;
    ScheduleParams schedule;
    bool stagger = false;      // offset thread i by i*period/N
    double duration_s = 0;     // 0: until signalled
    double start_delay_s = 0;  // wait before the first window
    std::string out_csv;       // "-" or empty: stdout
    int rt_priority = 0;       // >0: run the injector SCHED_FIFO at this priority
};

void validate_preempt(const PreemptConfig& c);
// Returns the process exit code; throws LoadError on setup failure.
int run_preempt(Session& session, const PreemptConfig& c);

}  // namespace spinlab::load
