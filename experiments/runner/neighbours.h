// experiments/runner/neighbours.h: the neighbour VMs of a run's neighbours-N phases.
//
// Neighbour k (1 to N) is a spinlab guest named <measured VM>-n<k>, started with `spinlab-vm
// run` (a child of the runner: PR_SET_PDEATHSIG, spinlab-vm's ledger and stale cleanup remove its
// QEMU, region, sockets and cgroups however the runner ends) and pinned as pinning.h plans.
// Every neighbour the run's phases need boots once, beside the measured VM at the start of the
// run, and is then paused (`spinlab-vm pause`: QMP stop, or virsh suspend; its vCPU threads take
// no host CPU) until the end of the run, except in the neighbours-N repetitions: one resumes
// neighbours 1..N before its warm-up and pauses them again after its window. So every other
// repetition has only the measured VM and its own condition on the host, and a run boots each
// neighbour once, not once per repetition. Its logs: logs/n<k>.vm.log (with each pause and
// resume) and logs/n<k>.console.log.
//
// Each neighbour's own lock counters are read over the measured window (reset, baseline, end:
// window.h without trace or clock samples) and written, in the snapshot's format, to
// snapshots/neighbours/<phase>-r<rep>-n<k>.json (analysis/README.md).
#pragma once
#include <cstdint>
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
// logs/n<k>. : the stem of neighbour k's logs (vm.log, console.log), relative to the results
// directory.
std::string neighbour_log_stem(uint32_t k);

class Neighbours {
public:
    Neighbours(const Spec& spec, std::string spinlab_vm, std::string measured_name, std::string results_dir);
    ~Neighbours() { stop(); }

    // Starts booting neighbours 1..count that are not there yet, without waiting (the runner
    // launches them beside the measured VM, so their boots overlap).
    void launch(uint32_t count);
    // Makes neighbours 1..count run: resumes those paused, boots those not there yet (side by
    // side) and waits until each launched guest is ready. Throws as Vm::start does, naming the
    // neighbour.
    void run(uint32_t count, const std::function<void(const std::string&)>& note);
    // Pauses every running neighbour. Returns "" or what failed (a neighbour that did not pause
    // is stopped, so it cannot load the host in another phase; the next run() boots it again).
    std::string pause();
    // Every running neighbour is still there; else `why` says which is not and why.
    bool alive(std::string* why);
    // The measured window of phase/rep, for the running neighbours: opened and closed with the
    // measured VM's.
    void open_windows(const std::string& phase, uint32_t rep);
    // Closes the windows and writes each neighbour's snapshot file; returns "" or what failed
    // (the measured VM's snapshot is kept either way).
    std::string close_windows();
    // Stops every neighbour. Idempotent.
    void stop();

    // Neighbours running now (1..running()); booted (running or paused).
    uint32_t running() const { return running_; }
    uint32_t booted() const { return uint32_t(vms_.size()); }
    // name and vCPU thread ids (index = vCPU) of each running neighbour, for the timeline's
    // --neighbour.
    std::vector<std::pair<std::string, std::vector<uint64_t>>> vcpu_threads() const;

private:
    struct One {
        Spec spec;
        std::unique_ptr<Vm> vm;
        std::unique_ptr<Window> window;
        std::vector<collect::ClockSample> samples;  // none taken (clock-samples 0)
    };
    // `spinlab-vm pause|resume NAME` for neighbour k (1-based); "" or what failed.
    std::string change(uint32_t k, const char* command);

    const Spec& spec_;
    std::string spinlab_vm_, measured_name_, results_dir_;
    std::string phase_;
    uint32_t rep_ = 0;
    uint32_t running_ = 0;
    std::vector<std::unique_ptr<One>> vms_;
};

}  // namespace spinlab::run
