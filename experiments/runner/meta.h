// experiments/runner/meta.h: what meta.json records about a run: the host (CPU, kernel, TSC
// rate), the source revision, the VM and the guest as they came up, and the spec's plan; and,
// once a freeze phase has started, the priority its freeze injector really ran at.
#pragma once
#include <map>
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

// What a freeze condition's ready file says of its injector's priority (conditions.h facts:
// rt_priority, rt_priority_fallback) into m.freeze_rt_priority. Returns true when it changed
// (meta.json is then written again); facts without rt_priority change nothing.
bool note_injector_priority(Meta& m, const std::map<std::string, std::string>& facts);

// What a freeze condition's ready file says of the freezer it measured (freezer_cgroup,
// freezer_key_held, freezer_freeze_write_ms, freezer_thaw_write_ms) into m.freezer under
// `slot` ("<phase>-r<rep>"). Returns true when it added one; facts without them change nothing.
// Throws naming the fact when one does not parse.
bool note_freezer(Meta& m, const std::string& slot, const std::map<std::string, std::string>& facts);

}  // namespace spinlab::run
