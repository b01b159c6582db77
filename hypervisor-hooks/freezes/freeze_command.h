// `spinlab-load freeze` (old name: preempt): deterministic lock-holder preemption. Each target
// thread gets a cgroup of its own (v1 freezer, or a v2 threaded cgroup's cgroup.freeze) and is
// frozen for the windows its FreezeSchedule gives, from a common origin (optionally staggered
// across threads).
//
// Each freeze becomes one row of the freeze record (freeze_record.h, README.md): planned
// window, requests, the kernel's confirmation and the effective window (effective_window.h),
// read from the threads' sched_switch events in a trace instance of freeze's own, with the
// switch-ins the kernel leaves out of it from their perf switch records. A row is
// written once its thread has run again, so a SIGKILL loses the rows not yet written.
//
// With --vcpu-state REGION each freeze also sets the vCPU's kVcpuOffFrozen bit in the guest's
// shared region, from just after the freeze write to just after the thaw write
// (vcpu_state_publisher.h), for the guest's vcpu_off().
#pragma once

#include <string>

#include "freeze_schedule.h"
#include "hypervisor-hooks/cgroups/thread_cgroup.h"
#include "hypervisor-hooks/cleanup/command_session.h"
#include "hypervisor-hooks/targets/thread_targets.h"

namespace spinlab::load {

struct FreezeConfig {
    TargetSpec targets;
    CgroupMethod method = CgroupMethod::kAuto;
    ScheduleParams schedule;
    bool stagger = false;      // offset thread i by i*period/N
    double duration_s = 0;     // 0: until signalled
    double start_delay_s = 0;  // wait before the first window
    std::string out_csv;       // "-" or empty: stdout
    std::string latency_json;  // optional: the freezer's latencies (freeze_latency.h) at exit
    // >0: run the injector SCHED_FIFO at this priority; where that is not permitted (EPERM) it
    // runs at normal priority with one warning, and the ready file says so (command_session.h).
    int rt_priority = 0;
    std::string vcpu_state;               // optional: the region file whose vCPU state words to keep
    std::string vcpu_state_latency_json;  // optional: the words' store latencies (PublishStats) at exit
};

void validate_freeze(const FreezeConfig& c);
// Returns the process exit code; throws LoadError on setup failure.
int run_freeze(Session& session, const FreezeConfig& c);

}  // namespace spinlab::load
