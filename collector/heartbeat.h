// collector/heartbeat.h: is the guest still there? Watch and record ask between snapshots.
// The guest is gone when its shared region file was unlinked, or when its clock publication
// count has not moved for the stall timeout. The count is only trusted once it has been seen
// moving: a guest that never publishes (an older kernel) is not declared dead for it.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace spinlab::collect {

class Heartbeat {
public:
    using Clock = std::chrono::steady_clock;
    explicit Heartbeat(std::chrono::milliseconds stall_timeout) : stall_(stall_timeout) {}

    // Feeds one observation; returns a reason when the guest is gone, nullopt while alive.
    std::optional<std::string> observe(bool file_unlinked, std::optional<uint64_t> count,
                                       Clock::time_point now);

private:
    std::chrono::milliseconds stall_;
    bool seen_moving_ = false;
    bool have_last_ = false;
    uint64_t last_count_ = 0;
    Clock::time_point last_change_{};
};

}  // namespace spinlab::collect
