// experiments/runner/neighbours.cc: see neighbours.h.
#include "neighbours.h"

#include <filesystem>
#include <stdexcept>

#include "pinning.h"
#include "results.h"
#include "text.h"

namespace fs = std::filesystem;

namespace spinlab::run {

std::string neighbour_snapshot_file(const std::string& phase, uint32_t rep, uint32_t k) {
    return "snapshots/neighbours/" + phase + "-r" + std::to_string(rep) + "-n" + std::to_string(k) + ".json";
}

Neighbours::Neighbours(const Spec& spec, std::string spinlab_vm, const std::string& measured_name,
                       std::string results_dir, const std::string& phase, uint32_t rep, uint32_t count)
    : results_dir_(std::move(results_dir)), phase_(phase), rep_(rep) {
    for (uint32_t k = 1; k <= count; ++k) {
        auto one = std::make_unique<One>();
        const std::string name = neighbour_name(measured_name, k);
        one->spec = neighbour_spec(spec, k, name);
        one->vm = std::make_unique<Vm>(one->spec, spinlab_vm, name, results_dir_);
        one->vm->set_neighbour(phase + "-r" + std::to_string(rep) + "-n" + std::to_string(k) + ".");
        vms_.push_back(std::move(one));
    }
}

void Neighbours::start(const std::function<void(const std::string&)>& note) {
    for (auto& one : vms_) one->vm->launch();
    for (size_t k = 0; k < vms_.size(); ++k) {
        try {
            vms_[k]->vm->start([&](const std::string& line) { note("neighbour " + line); });
        } catch (const std::exception& e) {
            throw std::runtime_error("neighbour VM " + std::to_string(k + 1) + " (" + vms_[k]->vm->name() +
                                     ") did not start: " + e.what());
        }
    }
}

bool Neighbours::alive(std::string* why) {
    for (auto& one : vms_)
        if (!one->vm->alive()) {
            if (why) *why = "neighbour VM " + one->vm->name() + " is gone: " + one->vm->why_gone();
            return false;
        }
    return true;
}

void Neighbours::open_windows() {
    for (auto& one : vms_)
        one->window = std::make_unique<Window>(one->vm->guest(), one->spec, phase_, rep_, one->samples,
                                               results_dir_, "");
}

std::string Neighbours::close_windows() {
    std::string problems;
    fs::create_directories(results_dir_ + "/snapshots/neighbours");
    for (size_t k = 0; k < vms_.size(); ++k) {
        One& one = *vms_[k];
        if (!one.window) continue;
        try {
            SnapshotRecord rec = one.window->close();
            write_file(results_dir_ + "/" + neighbour_snapshot_file(phase_, rep_, uint32_t(k + 1)), snapshot_json(rec));
        } catch (const std::exception& e) {
            problems += (problems.empty() ? "" : "; ") + std::string("neighbour ") + one.vm->name() + ": " + e.what();
        }
        one.window.reset();
    }
    return problems;
}

void Neighbours::stop() {
    for (auto& one : vms_) {
        one->window.reset();
        one->vm->stop();
    }
}

std::vector<std::pair<std::string, std::vector<uint64_t>>> Neighbours::vcpu_threads() const {
    std::vector<std::pair<std::string, std::vector<uint64_t>>> out;
    for (const auto& one : vms_) out.emplace_back(one->vm->name(), one->vm->info().vcpu_tids);
    return out;
}

}  // namespace spinlab::run
