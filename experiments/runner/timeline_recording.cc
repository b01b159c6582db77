// experiments/runner/timeline_recording.cc: see timeline_recording.h.
#include "timeline_recording.h"

#include <filesystem>
#include <cstdio>
#include <fstream>

#include "conditions.h"
#include "text.h"

namespace fs = std::filesystem;

namespace spinlab::run {

std::vector<std::string> timeline_argv(const std::string& spinlab_load, const std::string& phase, uint32_t rep,
                                       const VmInfo& vm, const std::string& csv, const std::string& ready,
                                       const std::string& freeze_csv, bool vcpu_state,
                                       const NeighbourThreads& neighbours, bool neighbour_option) {
    std::vector<std::string> argv{spinlab_load, "timeline", "--tid",   join_ids(vm.vcpu_tids),
                                  "--out",      csv,        "--phase", phase,
                                  "--rep",      std::to_string(rep),   "--ready-file", ready};
    if (!freeze_csv.empty()) argv.insert(argv.end(), {"--freezes", freeze_csv});
    if (vcpu_state && !vm.region_file.empty()) argv.insert(argv.end(), {"--vcpu-state", vm.region_file});
    if (neighbour_option)
        for (const auto& [name, tids] : neighbours)
            if (!tids.empty()) argv.insert(argv.end(), {"--neighbour", name + ":" + join_ids(tids)});
    return argv;
}

namespace {
// Whether `spinlab-load timeline --help` lists --neighbour.
bool knows_neighbour_option(const std::string& spinlab_load) {
    const std::string cmd = "'" + spinlab_load + "' timeline --help 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return false;
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    pclose(p);
    return text.find("--neighbour") != std::string::npos;
}
}  // namespace

std::string Timeline::start(const std::string& phase, uint32_t rep, const VmInfo& vm,
                            const std::string& freeze_csv, const NeighbourThreads& neighbours) {
    child_.reset();
    status_ = 0;
    if (!on_) return "";
    const std::string stem = phase + "-r" + std::to_string(rep);
    csv_ = results_dir_ + "/logs/timeline-" + stem + ".csv";
    const std::string ready = results_dir_ + "/logs/.timeline-" + stem + ".ready";
    log_ = results_dir_ + "/logs/timeline-" + stem + ".log";
    if (!neighbours.empty() && neighbour_option_ < 0) neighbour_option_ = knows_neighbour_option(spinlab_load_);
    const std::vector<std::string> argv = timeline_argv(spinlab_load_, phase, rep, vm, csv_, ready, freeze_csv,
                                                        vcpu_state_, neighbours, neighbour_option_ > 0);
    child_ = std::make_unique<Child>(argv, log_);
    if (wait_for_file(ready, *child_, std::chrono::seconds(20))) {
        // Read at once: spinlab-load removes its ready file when it exits.
        const auto facts = ready_facts(read_text(ready));
        if (auto it = facts.find("source"); it != facts.end()) source_ = it->second;
        return "";
    }
    std::string why = child_->running() ? "not ready after 20 s" : Child::describe(*child_->poll());
    child_->stop();
    child_.reset();
    on_ = false;
    off_reason_ = "no timeline: spinlab-load timeline " + why + ": " + last_line(log_);
    return off_reason_;
}

void Timeline::stop() {
    if (child_ && child_->running()) status_ = child_->stop();
}

std::string Timeline::keep(const std::string& phase, uint32_t rep) {
    if (!child_) return "";
    child_.reset();
    const std::string at = "timeline of " + phase + " r" + std::to_string(rep);
    if (!fs::exists(csv_)) return at + " left out: spinlab-load timeline " + Child::describe(status_) + ": " + last_line(log_);
    std::string rows = read_text(csv_);
    const size_t eol = rows.find('\n');
    if (eol == std::string::npos) return at + " left out: " + csv_ + " has no rows";
    const std::string header = rows.substr(0, eol + 1);
    const std::string path = results_dir_ + "/timeline.csv";
    if (fs::exists(path)) {
        if (read_text(path).compare(0, header.size(), header) != 0)
            return at + " left out: its header is not the one of " + path;
        rows.erase(0, eol + 1);
    }
    std::ofstream(path, std::ios::app) << rows;
    // Exit status 2: written, with a warning (lost trace events, freezes not marked).
    if (status_ != 0) return at + ": spinlab-load timeline " + Child::describe(status_) + ": " + last_line(log_);
    return "";
}

}  // namespace spinlab::run
