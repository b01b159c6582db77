// collector/heartbeat.cc: see heartbeat.h.
#include "heartbeat.h"

namespace spinlab::collect {

std::optional<std::string> Heartbeat::observe(bool file_unlinked, std::optional<uint64_t> count,
                                              Clock::time_point now) {
    if (file_unlinked) return std::string("its shared region file was removed");
    if (!count) return std::nullopt;  // a publication in progress: no information
    if (!have_last_) {
        have_last_ = true;
        last_count_ = *count;
        last_change_ = now;
        return std::nullopt;
    }
    if (*count != last_count_) {
        seen_moving_ = true;
        last_count_ = *count;
        last_change_ = now;
        return std::nullopt;
    }
    if (seen_moving_ && now - last_change_ >= stall_) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_change_);
        return "its clock publications stopped " + std::to_string(ms.count()) + " ms ago";
    }
    return std::nullopt;
}

}  // namespace spinlab::collect
