// experiments/soak/invariant_check.cc: see invariant_check.h.
#include "invariant_check.h"

#include <cstring>

namespace spinlab::soak {
namespace {

uint64_t sum(const uint64_t* v, uint32_t n) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; ++i) s += v[i];
    return s;
}

bool same(const LockClassPerf& a, const LockClassPerf& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Everything CPU k counted, but class `except`: it only grows while `resets` stays.
uint64_t progress(const collect::CpuSnapshot& cpu, uint32_t except) {
    uint64_t p = 0;
    for (uint32_t c = 0; c < cpu.classes.size(); ++c)
        if (c != except) p += cpu.classes[c].acquisitions + cpu.classes[c].holds_timed;
    return p;
}

}  // namespace

std::string invariant_error(const LockClassPerf& c) {
    const uint64_t waits = c.uncontended + sum(c.wait_hist, kHistBuckets) + c.wait_overflow;
    const uint64_t holds = sum(c.hold_hist, kHistBuckets) + c.hold_overflow;
    std::string e;
    if (waits != c.acquisitions)
        e = "uncontended + wait buckets + overflow = " + std::to_string(waits) + ", acquisitions = " +
            std::to_string(c.acquisitions);
    if (holds != c.holds_timed)
        e += std::string(e.empty() ? "" : "; ") + "hold buckets + overflow = " + std::to_string(holds) +
             ", holds timed = " + std::to_string(c.holds_timed);
    return e;
}

void InvariantChecker::check(uint32_t cpu, uint32_t c, const LockClassPerf& rec, CheckResult& out) {
    const uint64_t seen = rec.acquisitions + rec.holds_timed;
    if (seen == 0) return;  // never used: nothing to check
    auto key = std::make_pair(cpu, c);
    auto it = checked_.find(key);
    if (it != checked_.end() && it->second == seen) return;  // this state was checked already
    checked_[key] = seen;
    ++out.checks;
    std::string e = invariant_error(rec);
    if (!e.empty())
        out.violations.push_back("cpu " + std::to_string(cpu) + " class " + std::to_string(c) + " (" +
                                 names_.name(c) + "): " + e);
}

CheckResult InvariantChecker::add(const collect::Snapshot& s, bool workload_quiescent) {
    CheckResult out;
    recent_.push_back(s);
    if (recent_.size() > 3) recent_.pop_front();
    for (const collect::CpuSnapshot& cpu : s.cpus) {
        const uint32_t k = cpu.cpu;
        for (uint32_t c = 0; c < cpu.classes.size(); ++c) {
            if (is_workload(c)) {
                if (workload_quiescent) check(k, c, cpu.classes[c], out);
                continue;
            }
            if (recent_.size() < 3) continue;
            const collect::CpuSnapshot* r[3];
            bool all = true;
            for (int i = 0; i < 3; ++i) {
                const auto& cpus = recent_[size_t(i)].cpus;
                r[i] = k < cpus.size() && cpus[k].cpu == k ? &cpus[k] : nullptr;
                all = all && r[i] && c < r[i]->classes.size();
            }
            if (!all || r[0]->resets != r[2]->resets || r[1]->resets != r[2]->resets) continue;
            if (!same(r[0]->classes[c], r[1]->classes[c]) || !same(r[1]->classes[c], r[2]->classes[c]))
                continue;
            if (progress(*r[0], c) == progress(*r[1], c) || progress(*r[1], c) == progress(*r[2], c))
                continue;
            check(k, c, cpu.classes[c], out);
        }
    }
    return out;
}

}  // namespace spinlab::soak
