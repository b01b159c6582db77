// experiments/runner/neighbours.cc: see neighbours.h.
#include "neighbours.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "child.h"
#include "pinning.h"
#include "results.h"
#include "text.h"

namespace fs = std::filesystem;

namespace spinlab::run {

std::string neighbour_snapshot_file(const std::string& phase, uint32_t rep, uint32_t k) {
    return "snapshots/neighbours/" + phase + "-r" + std::to_string(rep) + "-n" + std::to_string(k) + ".json";
}

std::string neighbour_log_stem(uint32_t k) { return "n" + std::to_string(k) + "."; }

Neighbours::Neighbours(const Spec& spec, std::string spinlab_vm, std::string measured_name, std::string results_dir)
    : spec_(spec), spinlab_vm_(std::move(spinlab_vm)), measured_name_(std::move(measured_name)),
      results_dir_(std::move(results_dir)) {}

std::string Neighbours::change(uint32_t k, const char* command) {
    One& one = *vms_[k - 1];
    // A paused guest answers QMP at once; under a loaded host spinlab-vm itself may take seconds
    // to start.
    std::string problem = run_to_end({spinlab_vm_, command, one.vm->name()},
                                     results_dir_ + "/logs/" + neighbour_log_stem(k) + "vm.log", std::chrono::seconds(30));
    return problem.empty() ? "" : "neighbour VM " + one.vm->name() + ": " + problem;
}

void Neighbours::launch(uint32_t count) {
    for (uint32_t k = booted() + 1; k <= count; ++k) {
        auto one = std::make_unique<One>();
        const std::string name = neighbour_name(measured_name_, k);
        one->spec = neighbour_spec(spec_, k, name);
        one->vm = std::make_unique<Vm>(one->spec, spinlab_vm_, name, results_dir_);
        one->vm->set_neighbour(neighbour_log_stem(k));
        one->vm->launch();
        vms_.push_back(std::move(one));
    }
}

void Neighbours::run(uint32_t count, const std::function<void(const std::string&)>& note) {
    // Resume the paused ones first: they are ready at once, and new ones boot beside them.
    for (uint32_t k = running_ + 1; k <= std::min(count, booted()); ++k) {
        if (!vms_[k - 1]->vm->has_guest()) break;  // launched, not started yet: below
        if (std::string problem = change(k, "resume"); !problem.empty())
            throw std::runtime_error(problem + " (" + results_dir_ + "/logs/" + neighbour_log_stem(k) + "vm.log)");
        running_ = k;
    }
    launch(count);
    for (uint32_t k = running_ + 1; k <= count; ++k) {
        try {
            vms_[k - 1]->vm->start([&](const std::string& line) { note("neighbour " + line); });
        } catch (const std::exception& e) {
            throw std::runtime_error("neighbour VM " + std::to_string(k) + " (" + vms_[k - 1]->vm->name() +
                                     ") did not start: " + e.what());
        }
        running_ = k;
    }
}

std::string Neighbours::pause() {
    std::string problems;
    for (uint32_t k = running_; k >= 1; --k) {
        if (std::string problem = change(k, "pause"); !problem.empty()) {
            problems += (problems.empty() ? "" : "; ") + problem + ": stopped instead";
            // It must not run on beside another phase; it goes, with those booted after it.
            for (uint32_t j = booted(); j >= k; --j) {
                vms_[j - 1]->window.reset();
                vms_[j - 1]->vm->stop();
                vms_.pop_back();
            }
        }
    }
    running_ = 0;
    return problems;
}

bool Neighbours::alive(std::string* why) {
    for (uint32_t k = 1; k <= running_; ++k) {
        One& one = *vms_[k - 1];
        if (!one.vm->alive()) {
            if (why) *why = "neighbour VM " + one.vm->name() + " is gone: " + one.vm->why_gone();
            return false;
        }
    }
    return true;
}

void Neighbours::open_windows(const std::string& phase, uint32_t rep) {
    phase_ = phase;
    rep_ = rep;
    for (uint32_t k = 1; k <= running_; ++k) {
        One& one = *vms_[k - 1];
        one.window = std::make_unique<Window>(one.vm->guest(), one.spec, phase_, rep_, one.samples, results_dir_, "");
    }
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
        one->vm->stop();  // a paused QEMU ends as a running one does (spinlab-vm stop, SIGTERM)
    }
    vms_.clear();
    running_ = 0;
}

std::vector<std::pair<std::string, std::vector<uint64_t>>> Neighbours::vcpu_threads() const {
    std::vector<std::pair<std::string, std::vector<uint64_t>>> out;
    for (uint32_t k = 1; k <= running_; ++k) out.emplace_back(vms_[k - 1]->vm->name(), vms_[k - 1]->vm->info().vcpu_tids);
    return out;
}

}  // namespace spinlab::run
