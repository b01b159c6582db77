// experiments/runner/privilege.h: what a run needs that the user may lack, found before anything
// starts. The run directory (hostlib/run_dir.h), where spinlab-vm makes the VM's directory and
// spinlab-load its ledgers, must be one this user may create or write. Freezes (freeze-*) and throttling (throttle-*) move vCPU threads into cgroups
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

// "" when `user` may write the run directory `dir` and its vm/ folder, or create what of them is
// missing, else one sentence naming the path, why not and how to choose another
// (run_dir_hint()). `access_error(path)`: 0 when this user may write and search `path`, else
// the errno saying why not (ENOENT: it does not exist).
std::string run_dir_refusal(const std::string& dir, const std::string& user,
                            const std::function<int(const std::string&)>& access_error);

// The same for this process: spinlab::run_dir() (its refusal of a per-user directory another
// user could control, if that is the answer) and access(W_OK | X_OK).
std::string run_dir_refusal();

}  // namespace spinlab::run
