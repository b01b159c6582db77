// experiments/runner/conditions.h: the host condition of a phase, as a `spinlab-load` child
// (phase.h names them): its command line, and starting it until it says it is in effect
// (--ready-file). idle-host starts nothing.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "child.h"
#include "neighbours.h"
#include "phase.h"
#include "spec.h"
#include "vm.h"

namespace spinlab::run {

// The vCPU threads a condition acts on: by QEMU pid and vCPU index when the VM's pid is known
// (spinlab-load finds the threads named "CPU n/...", so its records carry the real vCPU index),
// else by thread id. An empty `vcpus` means every vCPU.
std::vector<std::string> vcpu_target_args(const VmInfo& vm, const std::vector<uint32_t>& vcpus);

// The spinlab-load command line for a phase other than idle-host. `freeze_csv` is where
// freeze writes its freeze record; `ready_file` appears once the condition is in effect.
std::vector<std::string> condition_argv(const Phase& p, const RunSpec& run,
                                        const std::string& spinlab_load, const VmInfo& vm,
                                        const std::string& freeze_csv,
                                        const std::string& ready_file);

struct Condition {
    std::unique_ptr<Child> child;  // none for idle-host
    std::string freeze_csv;        // freeze: the freeze record
    std::string what;              // for messages: "spinlab-load hog"
    Neighbours* neighbours = nullptr;  // neighbours-N: the run's other VMs (the runner's; running)
    // What spinlab-load said about how it runs: the `key=value` lines of its ready file after
    // the pid (freeze: rt_priority_asked, rt_priority, rt_priority_fallback; meta.h).
    std::map<std::string, std::string> facts;
};

// Where freeze phase p's repetition `rep` writes its freeze record:
// `results_dir`/freezes/<phase>-r<rep>.csv (results from before issue 53 have preempt/).
std::string freeze_record_path(const std::string& results_dir, const Phase& p, uint32_t rep);

// The `key=value` lines of a ready file's text (its first line, the pid, is not one).
std::map<std::string, std::string> ready_facts(const std::string& text);

// Starts phase p's condition for repetition `rep`: logs under `results_dir`/logs, the freeze
// record at freeze_record_path. Throws std::runtime_error when it is not in effect
// within 20 s, with the last line of its log.
Condition start_condition(const Phase& p, uint32_t rep, const RunSpec& run,
                          const std::string& spinlab_load, const VmInfo& vm,
                          const std::string& results_dir);

}  // namespace spinlab::run
