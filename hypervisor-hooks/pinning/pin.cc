#include "pin.h"

#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/id_list.h"

namespace spinlab::load {

std::vector<PinAssignment> plan_pinning(const std::vector<ThreadTarget>& threads,
                                        const std::vector<int>& cpus, bool all) {
    if (cpus.empty()) throw LoadError("--cpus is required for pin");
    std::vector<PinAssignment> plan;
    for (size_t i = 0; i < threads.size(); ++i) {
        plan.push_back({threads[i].tid, threads[i].vcpu,
                        all ? cpus : std::vector<int>{cpus[i % cpus.size()]}});
    }
    return plan;
}

std::vector<int> thread_affinity(int tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(tid, sizeof set, &set) < 0) {
        throw LoadError("sched_getaffinity of thread " + std::to_string(tid) + ": " + std::strerror(errno));
    }
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

std::vector<std::string> apply_pinning(const std::vector<PinAssignment>& plan) {
    std::vector<std::string> lines;
    for (const PinAssignment& a : plan) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int cpu : a.cpus) CPU_SET(cpu, &set);
        if (::sched_setaffinity(a.tid, sizeof set, &set) < 0) {
            throw LoadError("cannot pin thread " + std::to_string(a.tid) + " to CPU(s) " +
                            format_id_list(a.cpus) + ": " + std::strerror(errno));
        }
        lines.push_back(std::to_string(a.tid) + " " + std::to_string(a.vcpu) + " " +
                        format_id_list(thread_affinity(a.tid)));
    }
    return lines;
}

int run_pin(const PinConfig& c) {
    std::vector<ThreadTarget> threads = resolve_targets(c.targets);
    std::printf("tid vcpu cpus\n");
    for (const std::string& line : apply_pinning(plan_pinning(threads, c.cpus, c.all))) {
        std::printf("%s\n", line.c_str());
    }
    return 0;
}

}  // namespace spinlab::load
