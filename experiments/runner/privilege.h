// experiments/runner/privilege.h: what a spec's phases need that the user may lack, found before
// anything starts. Freezes (preempt-*) and throttling (throttle-*) move vCPU threads into cgroups
// spinlab-load creates at the top of the cgroup hierarchy (hypervisor-hooks/cgroups/thread_cgroup.h),
// so they need that directory writable: root, or a hierarchy given to this user. Host load
// (hogs), the timeline (perf switch records of one's own threads without tracefs) and the VM
// under TCG need nothing more than an ordinary user has.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "phase.h"

namespace spinlab::run {

// "" when every phase can run, else one sentence naming the first phase that cannot, what is
// missing and how to get it. `proc_mounts`: /proc/mounts text; `writable(dir)`: may this user
// create a directory there; `user`: the user's name, for the sentence.
std::string cgroup_refusal(const std::vector<Phase>& phases, const std::string& proc_mounts,
                           const std::function<bool(const std::string&)>& writable, const std::string& user);

// The same for this process: its /proc/mounts, access(W_OK) and user name; "" for root.
std::string cgroup_refusal(const std::vector<Phase>& phases);

}  // namespace spinlab::run
