// experiments/runner/results_testing.h: for the tests of the results files: a repetition's
// record framed (phase, rep, times, classes 0 "lockbench.0" and 1 "sched"), without counters,
// and the frame of meta.json.
#pragma once
#include <string>

#include "results.h"

namespace spinlab::run {

inline SnapshotRecord framed_record(const std::string& phase, uint32_t rep) {
    SnapshotRecord r;
    r.phase = phase;
    r.rep = rep;
    r.start = {1000, "2025-01-01T12:00:00Z"};
    r.end = {9000, "2025-01-01T12:00:02Z"};
    r.duration_s = 2.0;
    r.names.names = {"lockbench.0", "sched"};
    return r;
}

// meta.json's run id, date and VM (2 vCPUs under TCG); the rest as the test needs.
inline Meta framed_meta(const std::string& run_id) {
    Meta m;
    m.run_id = run_id;
    m.date = "2025-01-01T12:00:00Z";
    m.accelerator = "tcg";
    m.backend = "qemu";
    m.vcpus = 2;
    return m;
}

}  // namespace spinlab::run
