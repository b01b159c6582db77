// experiments/runner/progress.cc: see progress.h.
#include "progress.h"

#include <cmath>
#include <cstdio>

namespace spinlab::run {

std::string format_duration(double seconds) {
    long s = seconds > 0 ? long(std::lround(seconds)) : 0;
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

std::string format_rate(double v) {
    char buf[32];
    if (v < 0) return "-";
    if (v >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
    else if (v >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
    else if (v >= 1e4)
        std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
    else if (v >= 10)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else  // a few operations a second (a Linux guest's hackbench runs): keep two digits
        std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

std::string format_progress(const ProgressState& s) {
    std::string line = "[" + std::to_string(s.slot) + "/" + std::to_string(s.slots) + "] " +
                       s.phase + " r" + std::to_string(s.rep) + "/" +
                       std::to_string(s.repetitions) + " " + s.step + "  elapsed " +
                       format_duration(s.elapsed_s) + "  left " + format_duration(s.remaining_s) +
                       "  " + s.unit + "/s " + format_rate(s.ops_per_s);
    return line;
}

void Progress::show(const ProgressState& s, bool force) {
    std::string line = format_progress(s);
    if (terminal_) {
        std::string pad = line.size() < width_ ? std::string(width_ - line.size(), ' ') : "";
        out_ << "\r" << line << pad << std::flush;
        width_ = line.size();
        drawn_ = true;
        return;
    }
    if (force || s.elapsed_s - last_plain_s_ >= plain_every_s) {
        out_ << line << "\n" << std::flush;
        last_plain_s_ = s.elapsed_s;
    }
}

void Progress::clear() {
    if (terminal_ && drawn_) {
        out_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
        drawn_ = false;
        width_ = 0;
    }
}

void Progress::message(const std::string& line) {
    clear();
    out_ << line << "\n" << std::flush;
}

}  // namespace spinlab::run
