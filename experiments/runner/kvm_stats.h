// experiments/runner/kvm_stats.h: KVM's per-vCPU statistics around each repetition's window.
// Under KVM the runner asks `spinlab-vm stats NAME -o FILE` (QMP query-stats: exits, halt
// exits, hypercalls, preemption_reported / _other, directed yields, cumulative since the VM
// started) just before the window opens and just after it closes, into
// kvm-stats/<phase>-r<rep>-start.json and -end.json. spinlab-vm is the one writer of that
// format (vm-images/spinlab_vm/kvm_stats.py); the report turns each pair into rates per phase
// beside the timeline's switch-outs (analysis/spinlab_report/kvm_stats.py). Under TCG there is
// nothing to read and no file is written. A neighbour VM's counters are not sampled.
#pragma once
#include <cstdint>
#include <string>

namespace spinlab::run {

// "kvm-stats/<phase>-r<rep>-<when>.json", relative to the results directory; when: start|end.
std::string kvm_stats_file(const std::string& phase, uint32_t rep, const std::string& when);

// Runs `spinlab_vm stats vm_name -o results_dir/file` (its stderr appended to
// results_dir/logs/kvm-stats.log), giving it `timeout_ms`. Returns "" or what failed; a failure
// leaves no file (spinlab-vm writes it whole or not at all).
std::string sample_kvm_stats(const std::string& spinlab_vm, const std::string& vm_name,
                             const std::string& results_dir, const std::string& file,
                             int timeout_ms = 15000);

}  // namespace spinlab::run
