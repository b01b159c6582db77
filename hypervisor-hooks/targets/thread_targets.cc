#include "thread_targets.h"

#include <algorithm>
#include <charconv>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/id_list.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/qmp/qmp_client.h"

namespace spinlab::load {

std::optional<int> parse_vcpu_thread_name(const std::string& comm) {
    const std::string prefix = "CPU ";
    if (comm.rfind(prefix, 0) != 0) return std::nullopt;
    size_t slash = comm.find('/', prefix.size());
    if (slash == std::string::npos || slash == prefix.size()) return std::nullopt;
    int index = -1;
    auto [ptr, ec] = std::from_chars(comm.data() + prefix.size(), comm.data() + slash, index);
    if (ec != std::errc() || ptr != comm.data() + slash || index < 0) return std::nullopt;
    static const char* kAccels[] = {"TCG", "KVM", "HVF", "WHPX", "NVMM"};
    std::string accel = comm.substr(slash + 1);
    for (const char* a : kAccels) {
        if (accel == a) return index;
    }
    return std::nullopt;
}

void validate_target_spec(const TargetSpec& spec) {
    int sources = !spec.tids.empty() + (spec.qemu_pid != 0) + !spec.qmp_socket.empty();
    if (sources == 0) throw LoadError("no threads given: use --tid, --qemu-pid or --qmp");
    if (sources > 1) throw LoadError("give only one of --tid, --qemu-pid and --qmp");
    if (spec.qemu_pid < 0) throw LoadError("--qemu-pid " + std::to_string(spec.qemu_pid) + " is not a pid");
    if (!spec.vcpus.empty() && !spec.tids.empty()) {
        throw LoadError("--vcpus selects among discovered vCPUs; it does not go with --tid");
    }
}

std::vector<ThreadTarget> vcpu_threads_by_name(int qemu_pid) {
    if (!process_alive(qemu_pid)) {
        throw LoadError("--qemu-pid " + std::to_string(qemu_pid) + ": no such process");
    }
    std::vector<ThreadTarget> out;
    for (int tid : threads_of(qemu_pid)) {
        if (auto index = parse_vcpu_thread_name(thread_name(qemu_pid, tid))) {
            out.push_back({qemu_pid, tid, *index});
        }
    }
    if (out.empty()) {
        throw LoadError("--qemu-pid " + std::to_string(qemu_pid) +
                        ": no thread named 'CPU <n>/TCG' or 'CPU <n>/KVM' (start QEMU with "
                        "-name NAME,debug-threads=on, or pass --qmp SOCKET)");
    }
    return out;
}

std::vector<ThreadTarget> resolve_targets(const TargetSpec& spec) {
    validate_target_spec(spec);
    std::vector<ThreadTarget> all;
    if (!spec.tids.empty()) {
        for (size_t i = 0; i < spec.tids.size(); ++i) {
            std::optional<int> pid = thread_group_of(spec.tids[i]);
            if (!pid) throw LoadError("--tid " + std::to_string(spec.tids[i]) + ": no such thread");
            all.push_back({*pid, spec.tids[i], static_cast<int>(i)});
        }
        return all;
    }
    if (spec.qemu_pid) {
        all = vcpu_threads_by_name(spec.qemu_pid);
    } else {
        for (const QmpCpu& cpu : query_vcpus_over_qmp(spec.qmp_socket)) {
            std::optional<int> pid = thread_group_of(cpu.thread_id);
            if (!pid) {
                throw LoadError("--qmp " + spec.qmp_socket + ": vCPU " + std::to_string(cpu.cpu_index) +
                                " thread " + std::to_string(cpu.thread_id) +
                                " is not visible here (another pid namespace?)");
            }
            all.push_back({*pid, cpu.thread_id, cpu.cpu_index});
        }
    }
    std::sort(all.begin(), all.end(),
              [](const ThreadTarget& a, const ThreadTarget& b) { return a.vcpu < b.vcpu; });
    if (spec.vcpus.empty()) return all;
    std::vector<ThreadTarget> chosen;
    for (int v : spec.vcpus) {
        auto it = std::find_if(all.begin(), all.end(), [v](const ThreadTarget& t) { return t.vcpu == v; });
        if (it == all.end()) {
            std::vector<int> have;
            for (const ThreadTarget& t : all) have.push_back(t.vcpu);
            throw LoadError("--vcpus " + std::to_string(v) + ": no such vCPU (found " +
                            format_id_list(have) + ")");
        }
        chosen.push_back(*it);
    }
    return chosen;
}

}  // namespace spinlab::load
