// experiments/soak/lockbench_log.h: what the soak learns from the guest's console (COM1), read
// as it grows: lockbench's rounds (--rounds; kernel-patch/user/bin/lockbench.cc prints
// "lockbench: round R start" before a round's threads exist, and "lockbench: round R: ..." lines
// with its own counts and the in-guest verdict after they were joined), and kernel panics.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spinlab::soak {

class LockbenchLog {
public:
    // Console bytes appended since the last call; a line may be split across calls.
    void feed(std::string_view bytes);

    // No workload thread exists: a round ended and the next has not started (as far as the
    // console has told so far; the guest prints "start" before it creates the threads).
    bool between_rounds() const { return ended_ > 0 && ended_ == started_; }
    uint64_t rounds_ended() const { return ended_; }
    // Acquisitions per class id that lockbench counted itself up to the end of round
    // rounds_ended() (cumulative over rounds): only the classes whose line of that round was
    // seen already (the others still show an earlier round's count, which must not be compared).
    std::map<uint32_t, uint64_t> counts() const;
    uint64_t agreements() const { return agreements_; }  // "kernel counters agree" verdicts
    // Lines that report a disagreement, a broken invariant or a failed query in the guest.
    const std::vector<std::string>& problems() const { return problems_; }
    const std::vector<std::string>& panics() const { return panics_; }

private:
    void line(std::string_view l);

    std::string partial_;
    uint64_t started_ = 0, ended_ = 0, agreements_ = 0;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> counts_;  // class -> (round, count)
    std::vector<std::string> problems_, panics_;
};

}  // namespace spinlab::soak
