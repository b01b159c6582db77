// experiments/soak/invariant_check.h: the per-class invariants of spinlab/perfdata.h, checked
// on readings of the shared region only where they must hold exactly, i.e. where no record of
// that class was in flight while it was read.
//
// The region has no seqcount per record (shm.h): the host copies a class's fields one after
// the other while its CPU may be half-way through a record, so a single reading proves nothing.
// A (CPU, class) record is taken as quiescent, and checked, when:
//   - kernel classes (written in ring 0 with preemption off; an interrupt may nest one record
//     of another class inside): the record is identical in three readings a tick apart, the
//     CPU's `resets` did not change, and the CPU's other counters moved in both windows. A
//     record left half done cannot stay half done while its CPU runs on (the writer finishes it
//     before it can record anything else, apart from a nested interrupt, which returns to it),
//     so progress in two windows around an unchanged record rules out a record in flight;
//     an unchanged record on a stalled vCPU (frozen, throttled) shows no progress and is skipped.
//   - workload classes (lockbench's, written in ring 3, where a thread may be preempted in the
//     middle of a record): only while no workload thread exists, which lockbench announces on
//     its console (between "round R:" and "round R+1 start", see lockbench_log.h).
// Each distinct quiescent record is checked once ("checks" counts them), so an idle class does
// not inflate the count.
#pragma once
#include <spinlab/perfdata.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "snapshot.h"

namespace spinlab::soak {

// "" when both invariants hold, else which one is off and by how much.
std::string invariant_error(const LockClassPerf& c);

struct CheckResult {
    uint64_t checks = 0;
    std::vector<std::string> violations;  // "cpu 2 class 17 (user0): ..."
};

class InvariantChecker {
public:
    // workload[c]: class c is written from ring 3 (the lockbench classes); names for messages.
    InvariantChecker(std::vector<bool> workload, collect::ClassNames names)
        : workload_(std::move(workload)), names_(std::move(names)) {}

    // One reading per tick. `workload_quiescent`: no workload thread existed from before the
    // reading began until after it ended.
    CheckResult add(const collect::Snapshot& s, bool workload_quiescent);

private:
    bool is_workload(uint32_t c) const { return c < workload_.size() && workload_[c]; }
    void check(uint32_t cpu, uint32_t c, const LockClassPerf& rec, CheckResult& out);

    std::vector<bool> workload_;
    collect::ClassNames names_;
    std::deque<collect::Snapshot> recent_;  // the last three readings
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> checked_;  // (cpu, class) -> acquisitions+holds checked
};

}  // namespace spinlab::soak
