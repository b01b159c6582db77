// experiments/runner/kvm_stats.cc: see kvm_stats.h.
#include "kvm_stats.h"

#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

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
    try {
        Child c({spinlab_vm, "stats", vm_name, "-o", path}, results_dir + "/logs/kvm-stats.log");
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (c.running()) {
            if (std::chrono::steady_clock::now() >= until) {
                c.stop(std::chrono::seconds(2));
                return "spinlab-vm stats gave no answer within " + std::to_string(timeout_ms / 1000) + " s";
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const int st = *c.poll();
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            return "spinlab-vm stats " + Child::describe(st) + " (logs/kvm-stats.log)";
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace spinlab::run
