// experiments/runner/meta.h: what meta.json records about a run: the host (CPU, kernel, TSC
// rate), the source revision, the VM and the guest as they came up, and the spec's plan.
#pragma once
#include <string>
#include <vector>

#include "guest.h"
#include "phase.h"
#include "results.h"
#include "spec.h"
#include "vm.h"

namespace spinlab::run {

// The host's CPU model, kernel, CPU count, TSC rate (measured over 100 ms), and whether it is
// itself a VM (the hypervisor flag of /proc/cpuinfo).
HostInfo host_info();
// `git rev-parse HEAD` of `dir`, "-dirty" appended when tracked files changed; "unknown".
std::string git_rev(const std::string& dir);

struct MetaSources {
    const Spec& spec;
    const std::vector<Slot>& plan;
    std::string run_id, vm_name, source_dir;
    const VmInfo& vm;
    const Guest& guest;
};
Meta make_meta(const MetaSources& s);

}  // namespace spinlab::run
