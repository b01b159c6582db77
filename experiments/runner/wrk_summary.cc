// experiments/runner/wrk_summary.cc: see wrk_summary.h.
#include "wrk_summary.h"

#include <sstream>

#include "lockstat/log2_table.h"

namespace spinlab::run {

bool timing_all(const Spec& s) {
    std::istringstream words(s.vm.append);
    for (std::string w; words >> w;)
        if (w == "timing=all") return true;
    return false;
}

void WrkSummary::add(const std::string& phase, const collect::Snapshot& counters) {
    PhaseTotals& t = phases_[phase];
    t.reps++;
    for (const collect::CpuSnapshot& cpu : counters.cpus)
        for (const LockClassPerf& c : cpu.classes) {
            for (uint32_t k = 0; k < kHistBuckets; k++) t.hist[k] += c.wait_hist[k];
            t.overflow += c.wait_overflow;
        }
}

namespace {

std::string phase_block(const std::string& phase, uint32_t reps, const uint64_t* hist, uint64_t overflow) {
    uint64_t timed = overflow;
    uint32_t peak = 0;
    for (uint32_t k = 0; k < kHistBuckets; k++) {
        timed += hist[k];
        if (hist[k] > hist[peak]) peak = k;  // the lowest bucket on a tie
    }
    std::string table(lockstat::format_wrk_table(hist, overflow, nullptr, 0) + 1, '\0');
    table.resize(lockstat::format_wrk_table(hist, overflow, table.data(), table.size()));
    std::ostringstream o;
    o << "phase " << phase << " (" << reps << " repetition" << (reps == 1 ? "" : "s")
      << ", all CPUs and lock classes): " << timed << " timed acquisitions";
    if (timed > overflow) {
        char pct[24];
        lockstat::format_percent(hist[peak], timed, pct, sizeof pct);
        o << "; peak 2^" << peak << " with " << pct << " %";
    }
    o << "\n" << table;
    return o.str();
}

}  // namespace

std::string WrkSummary::text(const std::vector<std::string>& order) const {
    std::ostringstream o;
    for (size_t i = 0; i < order.size(); i++) {
        if (i) o << "\n";
        auto it = phases_.find(order[i]);
        if (it == phases_.end()) {
            o << "phase " << order[i] << ": no repetition kept\n";
            continue;
        }
        o << phase_block(order[i], it->second.reps, it->second.hist, it->second.overflow);
    }
    return o.str();
}

}  // namespace spinlab::run
