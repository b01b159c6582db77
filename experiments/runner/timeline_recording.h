// experiments/runner/timeline_recording.h: the run's timeline.csv: for each repetition, a
// `spinlab-load timeline` child records when each vCPU thread ran (sched_switch) and writes
// its rows, in the results' own format and with the condition's freezes marked `frozen`, to
// logs/timeline-<phase>-r<rep>.csv; once the repetition has ended those rows are added to
// results/<run-id>/timeline.csv unchanged (spinlab-load is the one writer of the format). The
// timeline is optional evidence: when it cannot start (neither tracefs nor perf) the run goes on
// without it and says so once. Its source (tracefs or, for an ordinary user, perf switch records)
// is meta.json's timeline_source.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "child.h"
#include "vm.h"

namespace spinlab::run {

// Neighbour VMs: name and vCPU thread ids (index = vCPU), as `--neighbour NAME:TID,...`.
using NeighbourThreads = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

// The `spinlab-load timeline` command line. With `neighbour_option` (the recorder has
// --neighbour: it names the preemptor of each off interval), one --neighbour per neighbour VM.
std::vector<std::string> timeline_argv(const std::string& spinlab_load, const std::string& phase, uint32_t rep,
                                       const VmInfo& vm, const std::string& csv, const std::string& ready,
                                       const std::string& freeze_csv, bool vcpu_state,
                                       const NeighbourThreads& neighbours, bool neighbour_option);

class Timeline {
public:
    // `on`: run.timeline; `vcpu_state`: run.vcpu-state (the recorder also keeps the guest's
    // per-vCPU "off" words in the VM's region file). Logs under `results_dir`/logs.
    Timeline(bool on, bool vcpu_state, std::string spinlab_load, std::string results_dir)
        : on_(on), vcpu_state_(vcpu_state), spinlab_load_(std::move(spinlab_load)),
          results_dir_(std::move(results_dir)) {}

    // Starts recording the VM's vCPU threads for phase/rep; `freeze_csv` (may be empty) is the
    // condition's freeze record, read by the recorder when it stops, so the condition must be
    // stopped first. Returns "", or, the one time it cannot start, why: the timeline is off for
    // the rest of the run (off_reason()).
    // `neighbours`: the phase's neighbour VMs, passed on when this spinlab-load knows --neighbour.
    std::string start(const std::string& phase, uint32_t rep, const VmInfo& vm, const std::string& freeze_csv,
                      const NeighbourThreads& neighbours = {});
    // Stops the recording, which then writes its rows (no-op when none runs).
    void stop();
    // After stop(): adds the finished repetition's rows to timeline.csv. Returns "" or what went
    // wrong (rows left out, or written with a warning such as lost trace events).
    std::string keep(const std::string& phase, uint32_t rep);

    const std::string& off_reason() const { return off_reason_; }
    // What the last recording that started read the switches from (spinlab-load's ready file:
    // "sched_switch+perf", "sched_switch" or "perf", timeline.h); empty until one started.
    const std::string& source() const { return source_; }

private:
    bool on_;
    bool vcpu_state_;
    std::string spinlab_load_, results_dir_;
    std::unique_ptr<Child> child_;
    int status_ = 0;   // the stopped recorder's wait status
    std::string csv_;  // the recording of the current repetition
    std::string log_;  // its stderr
    std::string off_reason_;
    int neighbour_option_ = -1;  // whether `spinlab-load timeline --help` lists --neighbour; -1: not asked
    std::string source_;
};

}  // namespace spinlab::run
