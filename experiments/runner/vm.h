// experiments/runner/vm.h: the VM of a run: started with `spinlab-vm run` (a child of the
// runner, so it dies with it) or attached by name (vm.attach: neither started nor stopped),
// known by what spinlab-vm writes to <run dir>/vm/<name>/vm.json, and reached through Guest.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child.h"
#include "clock_sampler.h"
#include "guest.h"
#include "halt_log.h"
#include "results.h"
#include "spec.h"

namespace spinlab::run {

// What spinlab-vm wrote about the VM.
struct VmInfo {
    std::string state;
    std::vector<uint64_t> vcpu_tids;
    std::string accel, backend, qemu_version;
    uint64_t qemu_pid = 0;
    std::optional<std::vector<uint32_t>> vcpu_apic_ids;  // by vCPU index, from QMP (qemu backend)
    std::string cpu_mapping;  // set by Vm::start: what the mapping check found (results.h Meta)
    // Set by Vm::start: the guest's shared region file, the state directory's `shm` link
    // resolved (spinlab-load --vcpu-state refuses links); empty when it does not resolve.
    std::string region_file;
    // A Linux guest's kernel as spinlab-vm booted it: "<Debian package> <version>"; empty for
    // spinlab's kernel, or a kernel given by path.
    std::string guest_kernel;
};

// Guest CPU n must be QEMU's vCPU n: the timeline follows vCPU n's thread as CPU n's. Empty
// when every guest CPU's local APIC id equals that vCPU's (QEMU's "apic-id"), else the error.
std::string cpu_mapping_problem(const std::vector<uint32_t>& guest_apic_ids,
                                const std::vector<uint32_t>& qemu_apic_ids);

// nullopt when the file is missing or half written.
std::optional<VmInfo> read_vm_json(const std::string& path);

// The run directory: spinlab::run_dir() (hostlib/run_dir.h).
std::string run_dir();

// The `spinlab-vm run` command line for the spec's VM; its console goes to
// `results_dir`/logs/<console>.log. Pinned as pinning.h's vm_pin(spec, 0) says.
std::vector<std::string> spinlab_vm_argv(const Spec& spec, const std::string& spinlab_vm,
                                         const std::string& vm_name, const std::string& results_dir,
                                         const std::string& console = "console");

// vm.guest = linux, booting the fetched kernel: `spinlab-vm prepare --guest linux` (Debian's
// kernel and the initramfs into build/linux/), waited for, its output in logs/prepare.log.
// Throws collect::CollectError when it fails, std::runtime_error on a signal.
void prepare_guest(const Spec& spec, const std::string& spinlab_vm, const std::string& results_dir,
                   const std::function<void(const std::string&)>& note);

class Vm {
public:
    Vm(const Spec& spec, std::string spinlab_vm, std::string name, std::string results_dir)
        : spec_(spec), spinlab_vm_(std::move(spinlab_vm)), name_(std::move(name)),
          results_dir_(std::move(results_dir)), dir_(run_dir() + "/vm/" + name_) {}
    ~Vm() { stop(); }

    // A neighbour VM (neighbours.h): its logs are logs/<stem>vm.log and logs/<stem>console.log
    // (the measured VM's: stem ""; neighbour k's: "n<k>."), and no clock samples or halt spans
    // are taken.
    void set_neighbour(const std::string& log_stem) {
        log_stem_ = log_stem;
        sample_clock_ = false;
    }
    // Starts `spinlab-vm run` without waiting (start() waits); VMs launched together boot
    // side by side. No-op for an attached VM or once launched.
    void launch();

    // Starts (or attaches to) the VM and waits until it runs with every vCPU and the guest is
    // ready: vm.boot-timeout, extended while the guest's console still writes (boot_watch.h). `note` tells the user what is being waited for.
    // Throws collect::CollectError (kExitNoVm, kExitAbi), or std::runtime_error when a signal
    // came.
    void start(const std::function<void(const std::string&)>& note);
    // The VM still runs: our child lives, its state directory and the guest's region are there.
    bool alive();
    // Why alive() said no, for the status.
    std::string why_gone();
    // Stops a VM we started (an attached one is left running), the clock sampler and the halt
    // recorder (after its last drain; halts() still answers). Idempotent.
    void stop();

    const std::string& name() const { return name_; }
    // The seconds from starting the VM to the guest answering, and the channel timeout used
    // since (vm.channel-timeout, raised to the boot's seconds: boot_watch.h); 0 before start().
    double boot_seconds() const { return boot_s_; }
    double channel_timeout_seconds() const { return channel_timeout_s_; }
    const VmInfo& info() const { return info_; }
    bool has_guest() const { return guest_ != nullptr; }
    Guest& guest() { return *guest_; }
    // Clock samples taken since the guest became ready (clock_sampler.h): every publication,
    // placed through the guest's HPET where it has one; else bracketed ones about every 100 ms.
    std::vector<collect::ClockSample> clock_samples() const {
        return clock_sampler_ ? clock_sampler_->samples() : std::vector<collect::ClockSample>{};
    }
    ClockSampling clock_sampling() const;
    // Why the run-long clock sampling stopped early ("" while it runs).
    std::string clock_sampler_error() const { return clock_sampler_ ? clock_sampler_->error() : ""; }
    // The guest's halt spans by CPU since the guest became ready (collector/halt_log.h: what
    // the last drain knew); empty for a neighbour VM. A CPU that does not log its
    // halts (a Linux guest, INSTRUMENT=0) has recording false.
    std::vector<collect::CpuHalts> halts() const {
        return halt_recorder_ ? halt_recorder_->halts() : std::vector<collect::CpuHalts>{};
    }
    // A drain now (HaltRecorder::drain_now), before halts.csv is written after a window.
    void drain_halts() {
        if (halt_recorder_) halt_recorder_->drain_now();
    }
    // Why the halt recording stopped early ("" while it runs): the region broke a rule.
    std::string halt_recorder_error() const { return halt_recorder_ ? halt_recorder_->error() : ""; }

private:
    // Guest CPU n against QEMU vCPU n by APIC id; throws collect::CollectError on a mismatch.
    void check_cpu_mapping();

    const Spec& spec_;
    std::string spinlab_vm_, name_, results_dir_;
    std::string dir_;  // <run dir>/vm/<name>
    std::string log_stem_;
    bool sample_clock_ = true;
    std::unique_ptr<Child> child_;
    VmInfo info_;
    std::unique_ptr<Guest> guest_;
    std::unique_ptr<collect::ClockSampler> clock_sampler_;
    std::unique_ptr<collect::HaltRecorder> halt_recorder_;  // beside the clock sampler; stopped, kept
    double boot_s_ = 0, channel_timeout_s_ = 0;
};

}  // namespace spinlab::run
