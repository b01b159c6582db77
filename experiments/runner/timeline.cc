// experiments/runner/timeline.cc: see timeline.h.
#include "timeline.h"

#include <filesystem>
#include <fstream>

#include "results.h"
#include "text.h"

namespace fs = std::filesystem;

namespace spinlab::run {

std::string Timeline::start(const std::string& phase, uint32_t rep, const VmInfo& vm) {
    child_.reset();
    if (!on_) return "";
    const std::string stem = phase + "-r" + std::to_string(rep);
    csv_ = results_dir_ + "/logs/timeline-" + stem + ".csv";
    const std::string ready = results_dir_ + "/logs/.timeline-" + stem + ".ready";
    const std::string log = results_dir_ + "/logs/timeline-" + stem + ".log";
    child_ = std::make_unique<Child>(
        std::vector<std::string>{spinlab_load_, "timeline", "--tid", join_ids(vm.vcpu_tids), "--out",
                                 csv_, "--ready-file", ready},
        log);
    if (wait_for_file(ready, *child_, std::chrono::seconds(20))) return "";
    std::string why = child_->running() ? "not ready after 20 s" : Child::describe(*child_->poll());
    child_->stop();
    child_.reset();
    on_ = false;
    off_reason_ = "no timeline: spinlab-load timeline " + why + ": " + last_line(log);
    return off_reason_;
}

void Timeline::stop() {
    if (child_) child_->stop();
}

std::string Timeline::append(const std::string& phase, uint32_t rep, const std::string& preempt_csv) {
    if (!child_ || !fs::exists(csv_)) return "";
    child_.reset();
    std::vector<Freeze> freezes;
    std::string problem;  // an unreadable freeze record leaves the rows without `frozen`
    if (!preempt_csv.empty()) {
        try {
            freezes = parse_preempt_csv(read_text(preempt_csv));
        } catch (const std::exception& e) {
            problem = std::string("cannot read the freeze record: ") + e.what();
        }
    }
    try {
        std::string rows = convert_timeline(read_text(csv_), phase, rep, freezes);
        const std::string path = results_dir_ + "/timeline.csv";
        const bool fresh = !fs::exists(path);
        std::ofstream f(path, std::ios::app);
        if (fresh) f << kTimelineHeader;
        f << rows;
    } catch (const std::exception& e) {
        return "timeline of " + phase + " r" + std::to_string(rep) + " left out: " + e.what();
    }
    return problem;
}

}  // namespace spinlab::run
