// experiments/runner/neighbours.h: the neighbour VMs of a neighbours-N phase. Like a hog they
// start before the warm-up and stop after the phase; each is a spinlab guest started with
// `spinlab-vm run` (a child of the runner: PR_SET_PDEATHSIG, spinlab-vm's ledger and stale
// cleanup remove its QEMU, region, sockets and cgroups however the runner ends), named
// <measured VM>-n<k>, pinned as pinning.h plans, its logs logs/<phase>-r<rep>-n<k>.vm.log and
// .console.log. Each neighbour's own lock counters are read over the measured window (reset,
// baseline, end: window.h without trace or clock samples) and written, in the snapshot's
// format, to snapshots/neighbours/<phase>-r<rep>-n<k>.json (analysis/README.md).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spec.h"
#include "vm.h"
#include "window.h"

namespace spinlab::run {

// snapshots/neighbours/<phase>-r<rep>-n<k>.json, relative to the results directory.
std::string neighbour_snapshot_file(const std::string& phase, uint32_t rep, uint32_t k);

class Neighbours {
public:
    // `count` neighbours of `measured_name` for phase/rep.
    Neighbours(const Spec& spec, std::string spinlab_vm, const std::string& measured_name,
               std::string results_dir, const std::string& phase, uint32_t rep, uint32_t count);
    ~Neighbours() { stop(); }

    // Launches every neighbour, then waits until each guest is ready (they boot side by side).
    // Throws as Vm::start does, naming the neighbour.
    void start(const std::function<void(const std::string&)>& note);
    // Every neighbour still runs; else `why` says which did not and why.
    bool alive(std::string* why);
    // The measured window: opened and closed with the measured VM's.
    void open_windows();
    // Closes the windows and writes each neighbour's snapshot file; returns "" or what failed
    // (the measured VM's snapshot is kept either way).
    std::string close_windows();
    // Stops every neighbour. Idempotent.
    void stop();

    // name and vCPU thread ids (index = vCPU) of each neighbour, for the timeline's --neighbour.
    std::vector<std::pair<std::string, std::vector<uint64_t>>> vcpu_threads() const;

private:
    struct One {
        Spec spec;
        std::unique_ptr<Vm> vm;
        std::unique_ptr<Window> window;
        std::vector<collect::ClockSample> samples;  // none taken (clock-samples 0)
    };
    std::string results_dir_, phase_;
    uint32_t rep_;
    std::vector<std::unique_ptr<One>> vms_;
};

}  // namespace spinlab::run
