// experiments/runner/progress.h: the live progress line on stderr: `\r`-updated on a terminal,
// a plain line every few seconds otherwise (logs, make run | tee).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace spinlab::run {

// The progress line's unit of a workload counted in lock acquisitions.
inline constexpr const char* kAcquisitionsUnit = "acq";

struct ProgressState {
    std::string phase;
    uint32_t rep = 0, repetitions = 0;
    uint32_t slot = 0, slots = 0;  // position in the whole plan, from 1
    std::string step;               // "warm-up", "measuring", ...
    double elapsed_s = 0;           // since the run began
    double remaining_s = 0;         // estimate for the whole run
    double ops_per_s = -1;          // negative: not known yet
    std::string unit = kAcquisitionsUnit;  // what one of those is: "acq", "hackbench runs", ...
};

// "[3/6] host-load r2/3 measuring  elapsed 0:42  left 1:10  acq/s 1.23M"; a workload the guest
// counts itself gives its own unit: "... left 1:10  hackbench runs/s 2.4"
std::string format_progress(const ProgressState& s);
// "1:05", "12:00:03" style.
std::string format_duration(double seconds);
// "2.40", "950", "12.3k", "1.23M".
std::string format_rate(double per_s);

class Progress {
public:
    Progress(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}
    // Shows the state: redraws the line on a terminal, else prints a line when at least
    // `plain_every_s` passed since the last one or `force`.
    void show(const ProgressState& s, bool force = false);
    // Ends the line (terminal) before other output.
    void clear();
    void message(const std::string& line);

private:
    std::ostream& out_;
    bool terminal_;
    bool drawn_ = false;
    size_t width_ = 0;
    double last_plain_s_ = -1e9;
    static constexpr double plain_every_s = 5;
};

}  // namespace spinlab::run
