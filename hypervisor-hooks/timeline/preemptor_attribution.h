// The preemptor of every off-CPU interval of the host timeline: who the switch that took a vCPU
// thread off its CPU gave the CPU to (RunInterval::preemptor_pid, from the sched_switch's
// next_pid), classed (spinlab/preemptor.h, PreemptorClass):
//   - frozen intervals (inside a freeze's effective window, mark_frozen)         -> freeze
//   - off intervals the thread left blocked (prev_state not runnable: S, D, ..., or
//     perf's "blocked"): nothing preempted it, whatever ran next                 -> blocked
//   - unknown intervals, and off ones whose switch-out named nobody              -> unknown
//   - the pid is another of the timeline's own vCPU threads                      -> own-vcpu
//   - the pid is a vCPU thread of a neighbour VM (--neighbour NAME:TID,...)       -> neighbour-vcpu
//   - the pid is a process of a spinlab-load ledger (spinlab-load hog's hogs)     -> hog
//   - any other task (pid 0, the idle task, included)                            -> host-task
// Exact where the timeline is: nothing is guessed from comms.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "run_intervals.h"

namespace spinlab::load {

// A neighbour VM as `spinlab-load timeline --neighbour NAME:TID[,TID...]` names it: the i-th
// TID is that VM's vCPU i.
struct Neighbour {
    std::string name;
    std::vector<int> vcpu_tids;
};
// Parses one --neighbour value; throws LoadError naming what is wrong. The name is a CSV field
// (no comma, quote, newline) and has no ':'; the TIDs are positive and distinct.
Neighbour parse_neighbour(const std::string& text);

struct PreemptorContext {
    std::map<int, int> own_vcpus;                            // tid -> vCPU (the timeline's targets)
    std::map<int, std::pair<std::string, int>> neighbours;  // tid -> (VM, vCPU)
    std::set<int> hogs;                                      // pids of spinlab-load's hogs
};
// The context of the timeline's targets and neighbours; throws LoadError when a TID is named
// twice (two neighbours, or a neighbour and a target).
PreemptorContext preemptor_context(const std::map<int, int>& own_vcpus, const std::vector<Neighbour>& neighbours);

// The processes recorded in the spinlab-load ledgers of state_dir (<dir>/spinlab-<pid>-ledger):
// the hogs. A line not (yet) whole is skipped; a missing directory gives none.
std::set<int> ledger_processes(const std::string& state_dir);

// Whether an off interval's reason says its thread left blocked, not preempted (prev_state not
// runnable); false for "start" and "no-switch", which know no switch-out.
bool left_blocked(const std::string& reason);

// Fills preemptor, preemptor_vm and preemptor_vcpu of every interval (on intervals: unknown,
// written as an empty column). A blocked interval keeps the pid and comm of the task that ran
// next: a fact of the switch, not its preemptor.
void classify_preemptors(std::vector<RunInterval>& intervals, const PreemptorContext& context);

}  // namespace spinlab::load
