// experiments/runner/pinning.cc: see pinning.h.
#include "pinning.h"

#include <algorithm>

namespace spinlab::run {

std::vector<std::vector<uint32_t>> pin_plan(const std::vector<uint32_t>& vm_vcpus,
                                            const std::vector<uint32_t>& host_cpus) {
    std::vector<std::vector<uint32_t>> out(vm_vcpus.size());
    if (host_cpus.empty()) return out;
    size_t next = 0;
    for (size_t k = 0; k < vm_vcpus.size(); ++k)
        for (uint32_t i = 0; i < vm_vcpus[k]; ++i) out[k].push_back(host_cpus[next++ % host_cpus.size()]);
    return out;
}

uint32_t neighbour_vcpus(const Spec& s) { return s.neighbours.cpus ? s.neighbours.cpus : s.vm.cpus; }

uint32_t max_neighbours(const Spec& s) {
    uint32_t n = 0;
    for (const Phase& p : s.run.phases)
        if (p.kind == PhaseKind::kNeighbours) n = std::max(n, p.neighbours);
    return n;
}

std::vector<uint32_t> vm_pin(const Spec& s, uint32_t k) {
    if (k == 0 && !s.vm.pin.empty()) return s.vm.pin;
    std::vector<uint32_t> counts{s.vm.cpus};
    for (uint32_t i = 1; i <= k; ++i) counts.push_back(neighbour_vcpus(s));
    return pin_plan(counts, s.neighbours.host_cpus)[k];
}

double overcommit(const Spec& s, uint32_t n, uint32_t host_cpus) {
    if (!host_cpus) return 0;
    return double(s.vm.cpus + n * neighbour_vcpus(s)) / double(host_cpus);
}

std::string neighbour_name(const std::string& measured, uint32_t k) {
    return measured + "-n" + std::to_string(k);
}

Spec neighbour_spec(const Spec& s, uint32_t k, const std::string& name) {
    Spec n;
    n.spec_file = s.spec_file;
    n.vm = s.vm;
    n.vm.name = name;
    n.vm.attach.clear();
    n.vm.cpus = neighbour_vcpus(s);
    if (s.neighbours.memory_mb) n.vm.memory_mb = s.neighbours.memory_mb;
    if (!s.neighbours.lock.empty()) n.vm.lock = s.neighbours.lock;
    n.vm.pin = vm_pin(s, k);
    n.workload = s.workload;
    if (!s.neighbours.program.empty()) {
        n.workload.program = s.neighbours.program;
        n.workload.args = s.neighbours.args;
        n.workload.kmix = false;
    }
    n.run = s.run;
    n.run.clock_samples = 0;
    n.run.vcpu_state = false;
    n.trace = s.trace;  // its spinlock boot options; no session (enable 0)
    n.trace.params.enable_flags = 0;
    n.trace.stacks = TraceSpec::default_stacks();
    n.trace.exports.clear();
    n.output = s.output;
    return n;
}

}  // namespace spinlab::run
