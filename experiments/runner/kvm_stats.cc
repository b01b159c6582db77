// experiments/runner/kvm_stats.cc: see kvm_stats.h.
#include "kvm_stats.h"

#include <chrono>
#include <filesystem>

#include "child.h"

namespace spinlab::run {

std::string kvm_stats_file(const std::string& phase, uint32_t rep, const std::string& when) {
    return "kvm-stats/" + phase + "-r" + std::to_string(rep) + "-" + when + ".json";
}

std::string sample_kvm_stats(const std::string& spinlab_vm, const std::string& vm_name,
                             const std::string& results_dir, const std::string& file, int timeout_ms) {
    const std::string path = results_dir + "/" + file;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) return "cannot create " + std::filesystem::path(path).parent_path().string() + ": " + ec.message();
    const std::string problem = run_to_end({spinlab_vm, "stats", vm_name, "-o", path}, results_dir + "/logs/kvm-stats.log",
                                           std::chrono::milliseconds(timeout_ms));
    return problem.empty() ? "" : problem + " (logs/kvm-stats.log)";
}

}  // namespace spinlab::run
