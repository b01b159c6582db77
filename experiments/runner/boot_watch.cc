// experiments/runner/boot_watch.cc: see boot_watch.h.
#include "boot_watch.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

namespace spinlab::run {

namespace {
double seconds(BootWatch::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::string fmt(double s) {
    char b[32];
    std::snprintf(b, sizeof b, s < 10 ? "%.1f" : "%.0f", s);
    return b;
}
}  // namespace

BootWatch::BootWatch(double boot_timeout_s, double channel_timeout_s, std::string console, Clock::time_point start)
    : boot_timeout_s_(boot_timeout_s), channel_timeout_s_(channel_timeout_s), console_(std::move(console)),
      start_(start), last_progress_(start) {}

void BootWatch::observe(uint64_t bytes, Clock::time_point now) {
    if (bytes > bytes_) last_progress_ = now;
    bytes_ = std::max(bytes_, bytes);
}

std::string BootWatch::check(Clock::time_point now) {
    struct stat st{};
    if (!console_.empty() && ::stat(console_.c_str(), &st) == 0) observe(uint64_t(st.st_size), now);
    return expired(now);
}

std::string BootWatch::expired(Clock::time_point now) const {
    const double waited = seconds(now - start_), quiet = seconds(now - last_progress_), limit = boot_timeout_s();
    const std::string what = factor_ == 1 ? "vm.boot-timeout = " + fmt(limit) + " s"
                                          : "vm.boot-timeout x " + std::to_string(int(factor_)) + " under KVM = " + fmt(limit) + " s";
    if (waited <= limit) return "";
    if (waited > kMaxBootFactor * limit)
        return "within " + fmt(waited) + " s (" + fmt(kMaxBootFactor) + " x " + what +
               ", the longest wait while its console still wrote)";
    if (quiet <= limit) return "";
    if (bytes_ == 0)
        return "within " + fmt(waited) + " s (" + what + "; its console wrote nothing" +
               (console_.empty() ? std::string(": not watched") : "") + ")";
    return "within " + fmt(waited) + " s (its console wrote nothing for the last " + fmt(quiet) +
           " s, more than " + what + ")";
}

double BootWatch::channel_timeout_s(Clock::time_point ready) const {
    return std::max(channel_timeout_s_, std::min(seconds(ready - start_), kMaxChannelTimeout));
}

}  // namespace spinlab::run
