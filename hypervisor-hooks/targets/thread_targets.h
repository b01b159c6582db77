// Which host threads a command acts on: explicit --tid lists, the vCPU threads of a QEMU process
// found by name (/proc/PID/task/*/comm is "CPU <n>/TCG" or "CPU <n>/KVM" when QEMU runs with
// -name NAME,debug-threads=on), or the vCPU threads QMP's query-cpus-fast reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace spinlab::load {

struct ThreadTarget {
    int pid;   // the process (thread group) the thread belongs to
    int tid;
    int vcpu;  // vCPU index; for --tid lists, the position in the list
};

struct TargetSpec {
    std::vector<int> tids;     // --tid
    int qemu_pid = 0;          // --qemu-pid
    std::string qmp_socket;    // --qmp
    std::vector<int> vcpus;    // --vcpus: a subset of the vCPUs (empty = all)
};

// "CPU 3/TCG" -> 3 ("KVM", "HVF", "WHPX", "NVMM" accelerators too); nullopt otherwise.
std::optional<int> parse_vcpu_thread_name(const std::string& comm);
// Throws LoadError unless exactly one of --tid, --qemu-pid, --qmp is given, naming the options.
void validate_target_spec(const TargetSpec& spec);
// Resolves to existing threads, sorted by vCPU index. Errors name the option and the value:
// a tid that does not exist, a QEMU pid without named vCPU threads, a --vcpus index not found.
std::vector<ThreadTarget> resolve_targets(const TargetSpec& spec);
// The vCPU threads of a QEMU process, found by their names.
std::vector<ThreadTarget> vcpu_threads_by_name(int qemu_pid);

}  // namespace spinlab::load
