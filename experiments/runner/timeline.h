// experiments/runner/timeline.h: the run's timeline.csv: for each repetition, a
// `spinlab-load timeline` child records when each vCPU thread ran (sched_switch), and its rows
// are appended to results/<run-id>/timeline.csv once the repetition ends. The timeline is
// optional evidence: when it cannot start (no root, no tracefs) the run goes on without it and
// says so once.
#pragma once
#include <memory>
#include <string>

#include "child.h"
#include "vm.h"

namespace spinlab::run {

class Timeline {
public:
    // `on`: run.timeline. Logs under `results_dir`/logs.
    Timeline(bool on, std::string spinlab_load, std::string results_dir)
        : on_(on), spinlab_load_(std::move(spinlab_load)), results_dir_(std::move(results_dir)) {}

    // Starts recording the VM's vCPU threads for phase/rep. Returns "", or, the one time it
    // cannot start, why: the timeline is off for the rest of the run (off_reason()).
    std::string start(const std::string& phase, uint32_t rep, const VmInfo& vm);
    // Stops the recording (no-op when none runs).
    void stop();
    // Appends the stopped recording's rows to timeline.csv; `preempt_csv` (may be empty) is the
    // condition's freeze record. Returns "" or what went wrong.
    std::string append(const std::string& phase, uint32_t rep, const std::string& preempt_csv);

    const std::string& off_reason() const { return off_reason_; }

private:
    bool on_;
    std::string spinlab_load_, results_dir_;
    std::unique_ptr<Child> child_;
    std::string csv_;  // the recording of the current repetition
    std::string off_reason_;
};

}  // namespace spinlab::run
