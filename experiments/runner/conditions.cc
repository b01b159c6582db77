// experiments/runner/conditions.cc: see conditions.h.
#include "conditions.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "text.h"

namespace fs = std::filesystem;

namespace spinlab::run {

std::vector<std::string> vcpu_target_args(const VmInfo& vm, const std::vector<uint32_t>& vcpus) {
    if (vm.qemu_pid) {
        std::vector<std::string> a{"--qemu-pid", std::to_string(vm.qemu_pid)};
        if (!vcpus.empty()) a.insert(a.end(), {"--vcpus", join_ids(vcpus)});
        return a;
    }
    std::vector<uint64_t> chosen;
    for (size_t i = 0; i < vm.vcpu_tids.size(); ++i)
        if (vcpus.empty() || std::find(vcpus.begin(), vcpus.end(), uint32_t(i)) != vcpus.end())
            chosen.push_back(vm.vcpu_tids[i]);
    return {"--tid", join_ids(chosen)};
}

std::vector<std::string> condition_argv(const Phase& p, const RunSpec& run,
                                        const std::string& spinlab_load, const VmInfo& vm,
                                        const std::string& freeze_csv,
                                        const std::string& ready_file) {
    std::vector<std::string> argv{spinlab_load};
    auto add = [&](const std::vector<std::string>& a) { argv.insert(argv.end(), a.begin(), a.end()); };
    switch (p.kind) {
        case PhaseKind::kHostLoad:
            argv.push_back("hog");
            if (!run.hog_cpus.empty()) add({"--cpus", join_ids(run.hog_cpus)});
            break;
        case PhaseKind::kFreeze:
            argv.push_back("freeze");
            add(vcpu_target_args(vm, run.freeze_vcpus));
            add({"--freeze-ms", std::to_string(p.freeze_ms), "--period-ms",
                 std::to_string(run.freeze_period_ms), "--seed", std::to_string(run.seed), "--out",
                 freeze_csv});
            if (run.freeze_rt_priority) add({"--rt-priority", std::to_string(run.freeze_rt_priority)});
            // The "frozen" bit of each frozen vCPU's word: by index, which spinlab-load knows
            // when it finds the threads from QEMU's pid (not from bare thread ids).
            if (run.vcpu_state && vm.qemu_pid && !vm.region_file.empty()) add({"--vcpu-state", vm.region_file});
            break;
        case PhaseKind::kThrottle:
            argv.push_back("throttle");
            add(vcpu_target_args(vm, run.throttle_vcpus));
            add({"--quota-pct", std::to_string(p.quota_pct)});
            break;
        case PhaseKind::kIdleHost:
        case PhaseKind::kNeighbours:
            throw std::logic_error(p.name() + " has no spinlab-load condition");
    }
    add({"--ready-file", ready_file});
    return argv;
}

std::string freeze_record_path(const std::string& results_dir, const Phase& p, uint32_t rep) {
    return results_dir + "/freezes/" + p.name() + "-r" + std::to_string(rep) + ".csv";
}

std::map<std::string, std::string> ready_facts(const std::string& text) {
    std::map<std::string, std::string> facts;
    size_t at = text.find('\n');
    while (at != std::string::npos && at + 1 < text.size()) {
        const size_t end = text.find('\n', at + 1);
        const std::string line = text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
        if (const size_t eq = line.find('='); eq != std::string::npos) facts[line.substr(0, eq)] = line.substr(eq + 1);
        at = end;
    }
    return facts;
}

Condition start_condition(const Phase& p, uint32_t rep, const RunSpec& run,
                          const std::string& spinlab_load, const VmInfo& vm,
                          const std::string& results_dir) {
    Condition c;
    // neighbours-N: VMs, not a spinlab-load child (neighbours.h; the runner starts them).
    if (p.kind == PhaseKind::kIdleHost || p.kind == PhaseKind::kNeighbours) return c;
    const std::string stem = p.name() + "-r" + std::to_string(rep);
    const std::string ready = results_dir + "/logs/." + stem + ".ready";
    const std::string log = results_dir + "/logs/" + stem + ".log";
    if (p.kind == PhaseKind::kFreeze) {
        c.freeze_csv = freeze_record_path(results_dir, p, rep);
        fs::create_directories(fs::path(c.freeze_csv).parent_path());
    }
    std::vector<std::string> argv = condition_argv(p, run, spinlab_load, vm, c.freeze_csv, ready);
    c.what = "spinlab-load " + argv[1];
    c.child = std::make_unique<Child>(argv, log);
    if (!wait_for_file(ready, *c.child, std::chrono::seconds(20))) {
        std::string why = c.child->running() ? "not in effect after 20 s"
                                              : Child::describe(*c.child->poll());
        c.child->stop();
        throw std::runtime_error(c.what + " for " + stem + " " + why + ": " + last_line(log));
    }
    // Read at once: spinlab-load removes its ready file when it exits (then: no facts).
    c.facts = ready_facts(read_text(ready));
    return c;
}

}  // namespace spinlab::run
