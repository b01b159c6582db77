// experiments/runner/phase.cc: see phase.h.
#include "phase.h"

#include <algorithm>
#include <stdexcept>

namespace spinlab::run {
namespace {

// A number of at most 6 digits that is the whole of `s`, or -1.
long small_number(const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    return std::stol(s);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

std::string Phase::name() const {
    switch (kind) {
        case PhaseKind::kIdleHost:
            return "idle-host";
        case PhaseKind::kHostLoad:
            return "host-load";
        case PhaseKind::kFreeze:
            return "freeze-" + std::to_string(freeze_ms) + "ms";
        case PhaseKind::kThrottle:
            return "throttle-" + std::to_string(quota_pct) + "%";
        case PhaseKind::kNeighbours:
            return "neighbours-" + std::to_string(neighbours);
    }
    return "invalid";
}

Phase parse_phase(const std::string& text) {
    const std::string accepted =
        "one of idle-host, host-load, freeze-Nms (N from 1 to 10000), throttle-P% (P from 1 to 99), "
        "neighbours-N (N from 1 to 8)";
    if (text == "idle-host") return {PhaseKind::kIdleHost};
    if (text == "host-load") return {PhaseKind::kHostLoad};
    // freeze-Nms, or preempt-Nms, its old name (issue 53)
    for (const std::string head : {"freeze-", "preempt-"})
        if (text.rfind(head, 0) == 0 && ends_with(text, "ms")) {
            long n = small_number(text.substr(head.size(), text.size() - head.size() - 2));
            if (n < 1 || n > 10000)
                throw std::invalid_argument("'" + text + "': the freeze must be 1 to 10000 ms");
            return {PhaseKind::kFreeze, uint32_t(n), 0};
        }
    if (text.rfind("throttle-", 0) == 0 && ends_with(text, "%")) {
        long p = small_number(text.substr(9, text.size() - 10));
        if (p < 1 || p > 99)
            throw std::invalid_argument("'" + text + "': the quota must be 1 to 99 percent");
        return {PhaseKind::kThrottle, 0, uint32_t(p)};
    }
    if (text.rfind("neighbours-", 0) == 0) {
        long n = small_number(text.substr(11));
        if (n < 1 || n > 8)
            throw std::invalid_argument("'" + text + "': the number of neighbour VMs must be 1 to 8");
        Phase p{PhaseKind::kNeighbours};
        p.neighbours = uint32_t(n);
        return p;
    }
    throw std::invalid_argument("unknown phase '" + text + "': " + accepted);
}

const char* order_name(Order o) { return o == Order::kAbba ? "abba" : "shuffle"; }

Order parse_order(const std::string& text) {
    if (text == "abba") return Order::kAbba;
    if (text == "shuffle") return Order::kShuffle;
    throw std::invalid_argument("'" + text + "' is not an order: abba or shuffle");
}

std::vector<Slot> build_schedule(uint32_t phases, uint32_t repetitions, Order order,
                                 uint64_t seed) {
    std::vector<Slot> out;
    uint64_t state = seed;
    for (uint32_t rep = 1; rep <= repetitions; ++rep) {
        std::vector<uint32_t> perm(phases);
        for (uint32_t i = 0; i < phases; ++i) perm[i] = i;
        if (order == Order::kAbba) {
            if (rep % 2 == 0) std::reverse(perm.begin(), perm.end());
        } else {
            for (uint32_t i = phases; i > 1; --i) {  // Fisher-Yates
                uint32_t j = uint32_t(splitmix64(state) % i);
                std::swap(perm[i - 1], perm[j]);
            }
        }
        for (uint32_t p : perm) out.push_back({p, rep});
    }
    return out;
}

}  // namespace spinlab::run
