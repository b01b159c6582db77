// experiments/runner/meta.cc: see meta.h.
#include "meta.h"

#include <spinlab/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hostlib/host_tsc.h"
#include "locations.h"
#include "pinning.h"
#include "text.h"

namespace spinlab::run {

HostInfo host_info() {
    HostInfo h;
    std::istringstream cpu(read_text("/proc/cpuinfo"));
    std::string line;
    while (std::getline(cpu, line)) {
        if (line.rfind("model name", 0) == 0 && h.cpu_model.empty())
            h.cpu_model = line.substr(line.find(':') + 2);
        if (line.rfind("flags", 0) == 0) {
            h.hypervisor = (line + " ").find(" hypervisor ") != std::string::npos;
            break;  // the first CPU's flags: model name comes before them
        }
    }
    struct utsname u;
    if (uname(&u) == 0) h.kernel = std::string(u.release) + " " + u.version;
    h.cpus = uint32_t(sysconf(_SC_NPROCESSORS_ONLN));
    // The TSC rate: TSC cycles over 100 ms of CLOCK_MONOTONIC_RAW.
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    uint64_t t0 = collect::host_tsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    uint64_t t1 = collect::host_tsc();
    double ns = double(b.tv_sec - a.tv_sec) * 1e9 + double(b.tv_nsec - a.tv_nsec);
    h.tsc_hz = uint64_t(std::llround(double(t1 - t0) / ns * 1e9 / 1e5) * 100000);
    return h;
}

std::string git_rev(const std::string& dir) {
    if (dir.empty()) return build_revision();  // installed: no source tree to ask
    std::string rev = command_line_output("git -C " + shell_quote(dir) + " rev-parse HEAD");
    if (rev.empty()) return "unknown";
    std::string dirty = command_line_output("git -C " + shell_quote(dir) +
                                            " status --porcelain --untracked-files=no | head -1");
    return dirty.empty() ? rev : rev + "-dirty";
}

Meta make_meta(const MetaSources& s) {
    const Spec& spec = s.spec;
    Meta m;
    m.run_id = s.run_id;
    m.date = iso_utc(collect::realtime_ns());
    m.git_rev = git_rev(s.source_dir);
    m.host = host_info();
    m.qemu_version = s.vm.qemu_version;
    if (s.vm.backend == "libvirt") {
        std::string v = command_line_output("virsh --version");
        m.libvirt_version = v.empty() ? "unknown" : v;
    }
    m.accelerator = s.vm.accel;
    m.backend = s.vm.backend;
    m.vcpus = spec.vm.cpus;
    m.memory_mb = spec.vm.memory_mb;
    const SystemConfiguration& c = s.guest.configuration();
    // What the guest runs, named as the ABI names it (the spellings of lock= and clock=).
    m.lock = spinlab::lock_algorithm_name(spinlab::LockAlgorithm(c.lock_algorithm));
    m.clock = spinlab::clock_source_name(spinlab::ClockSource(c.clock_source));
    m.pause = c.pause_enabled != 0;
    const std::vector<uint32_t> pin = vm_pin(spec, 0);
    m.pinning = pin.empty() ? "none" : "vCPU i on host CPU " + join_ids(pin) + "[i]";
    m.guest_tsc_hz = s.guest.tsc_hz();
    m.workload = workload_line(spec);
    m.kernel_append = kernel_append(spec);
    for (const Phase& p : spec.run.phases) m.phases.push_back(p.name());
    m.freeze_rt_priority.asked = spec.run.freeze_rt_priority;
    m.repetitions = spec.run.repetitions;
    m.order = order_name(spec.run.order);
    m.seed = spec.run.seed;
    for (const Slot& slot : s.plan) m.plan.push_back({spec.run.phases[slot.phase].name(), slot.rep});
    m.duration_s = spec.run.duration_s;
    m.warmup_s = spec.run.warmup_s;
    m.vm_name = s.vm_name;
    m.vcpu_thread_ids = s.vm.vcpu_tids;
    m.cpu_mapping = s.vm.cpu_mapping;
    m.guest_build_id = std::string(c.build_id, strnlen(c.build_id, sizeof c.build_id));
    m.guest_hypervisor = std::string(c.hypervisor_signature,
                                     strnlen(c.hypervisor_signature, sizeof c.hypervisor_signature));
    m.guest = spec.vm.guest;
    m.guest_kernel = s.vm.guest_kernel;
    m.runner_version = "spinlab-run format 1";
    if (const uint32_t most = max_neighbours(spec)) {
        Meta::Neighbours n;
        n.host_cpus = spec.neighbours.host_cpus;
        n.vms.push_back({s.vm_name, "measured", spec.vm.cpus, spec.vm.memory_mb, m.lock, m.workload, pin});
        for (uint32_t k = 1; k <= most; ++k) {
            const Spec ns = neighbour_spec(spec, k, neighbour_name(s.vm_name, k));
            n.vms.push_back({ns.vm.name, "neighbour", ns.vm.cpus, ns.vm.memory_mb, ns.vm.lock,
                             workload_line(ns), ns.vm.pin});
        }
        const uint32_t over = n.host_cpus.empty() ? m.host.cpus : uint32_t(n.host_cpus.size());
        for (const Phase& p : spec.run.phases)
            n.overcommit.emplace_back(p.name(), overcommit(spec, p.kind == PhaseKind::kNeighbours ? p.neighbours : 0, over));
        m.neighbours = n;
    }
    if (spec.trace.enabled()) m.trace = spec.trace.params;
    m.trace_stacks = spec.trace.stacks;
    return m;
}

bool note_injector_priority(Meta& m, const std::map<std::string, std::string>& facts) {
    auto used = facts.find("rt_priority");
    if (used == facts.end()) return false;
    Meta::InjectorPriority now = m.freeze_rt_priority;
    uint32_t priority = 0;
    const std::string& text = used->second;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), priority);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        throw std::runtime_error("spinlab-load's ready file: rt_priority '" + text + "' is not a priority");
    now.used = priority;
    auto fallback = facts.find("rt_priority_fallback");
    now.fallback = fallback == facts.end() ? "" : fallback->second;
    if (now.used == m.freeze_rt_priority.used && now.fallback == m.freeze_rt_priority.fallback) return false;
    m.freeze_rt_priority = now;
    return true;
}

bool note_freezer(Meta& m, const std::string& slot, const std::map<std::string, std::string>& facts) {
    auto cgroup = facts.find("freezer_cgroup");
    if (cgroup == facts.end()) return false;
    auto fact = [&](const char* key) -> const std::string& {
        auto it = facts.find(key);
        if (it == facts.end()) throw std::runtime_error(std::string("spinlab-load's ready file: no ") + key);
        return it->second;
    };
    auto ms = [&](const char* key) {
        const std::string& text = fact(key);
        double v = -1;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(v >= 0))
            throw std::runtime_error(std::string("spinlab-load's ready file: ") + key + " '" + text +
                                     "' is not a time in ms");
        return v;
    };
    if (cgroup->second != "v1" && cgroup->second != "v2")
        throw std::runtime_error("spinlab-load's ready file: freezer_cgroup '" + cgroup->second + "' is not v1 or v2");
    const std::string& held = fact("freezer_key_held");
    if (held != "0" && held != "1")
        throw std::runtime_error("spinlab-load's ready file: freezer_key_held '" + held + "' is not 0 or 1");
    m.freezer.push_back({slot, cgroup->second, held == "1", ms("freezer_freeze_write_ms"), ms("freezer_thaw_write_ms")});
    return true;
}

}  // namespace spinlab::run
