// `hog`: the original experiment's host load, a compute-bound process per host CPU (or per chosen
// CPU), pinned to it, at a nice level, busy `duty` percent of every `period`.
//
// Each hog is a forked child named "spinlab-hog" that dies with its parent (PR_SET_PDEATHSIG
// SIGKILL, checked against the race with a getppid() test) and is recorded in the ledger
// with its start time, so the guardian or a later run can kill it if all else failed.
#pragma once

#include <vector>

#include "hypervisor-hooks/cleanup/command_session.h"

namespace spinlab::load {

struct HogConfig {
    std::vector<int> cpus;   // empty: every CPU this process may run on
    double duty_pct = 100;   // 1..100
    double period_ms = 100;  // duty-cycle period
    int nice = 0;            // -20..19
    double duration_s = 0;   // 0: until signalled
};

void validate_hog(const HogConfig& c);
// The CPUs we may run on (sched_getaffinity), sorted.
std::vector<int> allowed_cpus();
// The busy part of one period in ns; the hog loop's one formula, kept pure for the tests.
uint64_t busy_ns_per_period(double duty_pct, double period_ms);
int run_hog(Session& session, const HogConfig& c);

}  // namespace spinlab::load
