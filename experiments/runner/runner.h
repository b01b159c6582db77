// experiments/runner/runner.h: one experiment, start to finish.
//
//   start the VM (spinlab-vm run, the workload on the kernel command line; a child of ours, so
//   it dies with us) -> wait for the guest's region and channel, check their ABI versions ->
//   for each (phase, repetition) in the planned order:
//       start the condition (spinlab-load hog|freeze|throttle, --ready-file) -> warm up ->
//       start the timeline (spinlab-load timeline) -> reset the counters (channel) -> baseline
//       snapshot (region) and clock samples -> measure -> snapshot, long waits, clock samples ->
//       stop the timeline, stop the condition -> write the snapshot, timeline rows, clock.json,
//       status.json
//   -> stop the VM. Every exit path (normal, error, SIGINT/SIGTERM/SIGHUP, a dead VM) stops the
//   children and marks status.json complete or partial with the reason; SIGKILL of the runner
//   reaches them through PR_SET_PDEATHSIG (child.h).
#pragma once
#include <ostream>
#include <string>

#include "locations.h"
#include "spec.h"

namespace spinlab::run {

enum RunExit : int {
    kRunComplete = 0,
    kRunPartial = 1,
    kRunUsage = 2,
    kRunNoVm = 3,
    kRunAbi = 4,
};

struct Tools {
    std::string spinlab_vm;    // bin/spinlab-vm beside spinlab-run
    std::string spinlab_load;  // bin/spinlab-load beside spinlab-run
    std::string source_dir;    // for git_rev; empty when installed (the build's revision)
};

// Finds the tools beside spinlab-run ($SPINLAB_VM, $SPINLAB_LOAD override). Throws SpecError
// naming a missing one.
Tools find_tools(const Locations& where);

// Runs `spec`; progress and messages on `err`. Returns a RunExit. Prints the results
// directory on `out` (one line) once it exists.
int run_experiment(const Spec& spec, const Tools& tools, std::ostream& out, std::ostream& err);

// The plan in words (--dry-run).
std::string describe_plan(const Spec& spec);

}  // namespace spinlab::run
