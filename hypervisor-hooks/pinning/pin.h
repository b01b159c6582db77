// `pin`: vCPU threads to host CPUs with sched_setaffinity. Thread i goes to CPU i of the list
// (round robin when there are more threads than CPUs), or, with `all`, every thread may use
// every listed CPU. Affinity is not undone on exit: pinning is a setting, not a load, and
// the runner pins once for the whole run. It reports what it set.
#pragma once

#include <string>
#include <vector>

#include "hypervisor-hooks/targets/thread_targets.h"

namespace spinlab::load {

struct PinConfig {
    TargetSpec targets;
    std::vector<int> cpus;
    bool all = false;
};

struct PinAssignment {
    int tid;
    int vcpu;
    std::vector<int> cpus;
};

// Pure: which CPUs each thread gets.
std::vector<PinAssignment> plan_pinning(const std::vector<ThreadTarget>& threads,
                                        const std::vector<int>& cpus, bool all);
// Applies the plan; returns one line per thread "tid vcpu cpus".
std::vector<std::string> apply_pinning(const std::vector<PinAssignment>& plan);
// The CPUs a thread may run on now.
std::vector<int> thread_affinity(int tid);
int run_pin(const PinConfig& c);

}  // namespace spinlab::load
