// experiments/soak/lockbench_log.cc: see lockbench_log.h.
#include "lockbench_log.h"

#include <cstdio>

namespace spinlab::soak {

void LockbenchLog::feed(std::string_view bytes) {
    for (char ch : bytes) {
        if (ch == '\n') {
            line(partial_);
            partial_.clear();
        } else if (ch != '\r') {
            partial_ += ch;
        }
    }
}

std::map<uint32_t, uint64_t> LockbenchLog::counts() const {
    std::map<uint32_t, uint64_t> out;
    for (const auto& [cls, rn] : counts_)
        if (rn.first == ended_) out[cls] = rn.second;
    return out;
}

void LockbenchLog::line(std::string_view l) {
    if (l.find("PANIC on cpu") != std::string_view::npos) {
        panics_.emplace_back(l);
        return;
    }
    const std::string s(l);
    unsigned long long round = 0, id = 0, n = 0;
    unsigned user = 0;
    int used = 0;
    if (std::sscanf(s.c_str(), "lockbench: round %llu start%n", &round, &used) == 1 && size_t(used) == s.size()) {
        started_ = round;
        return;
    }
    if (std::sscanf(s.c_str(), "lockbench: round %llu:%n", &round, &used) != 1 || used == 0) {
        if (s.rfind("lockbench:", 0) == 0 &&
            (s.find("the kernel counted") != std::string::npos || s.find("!=") != std::string::npos ||
             s.find("query class") != std::string::npos))
            problems_.push_back(s);  // a single-round lockbench's verdict
        return;
    }
    const char* rest = s.c_str() + used;
    if (round != ended_) {  // the first line after a round's threads were joined
        ended_ = round;
    }
    if (std::sscanf(rest, " class user%u (id %llu): %llu acquisitions", &user, &id, &n) == 3) {
        counts_[uint32_t(id)] = {round, n};
    } else if (std::sscanf(rest, " class id %llu: kernel counters agree (%llu)", &id, &n) == 2) {
        ++agreements_;
    } else if (s.find("the kernel counted") != std::string::npos || s.find("!=") != std::string::npos ||
               s.find("query class") != std::string::npos) {
        problems_.push_back(s);
    }
}

}  // namespace spinlab::soak
