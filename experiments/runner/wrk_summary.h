// experiments/runner/wrk_summary.h: what spinlab-run prints at the end of a run whose guest was
// booted with timing=all (experiments/wrk.ini): per phase, the original WRK experiment's table
// (`2^k  count  %`, lockstat/log2_table.h's format_wrk_table) of every repetition kept, all CPUs and
// lock classes merged, with the bucket where it peaks. Under timing=all every acquisition is in a
// wait bucket, so the peak is the uncontended case. spinlab-report shows the same table
// (analysis/spinlab_report/wrk_table.py). Pure: fed the repetitions' counters, asked for text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <spinlab/perfdata.h>

#include "snapshot.h"
#include "spec.h"

namespace spinlab::run {

// Whether the spec boots the guest with timing=all (a word of [vm] append; the kernel refuses
// to boot with a bad timing= value, so a run that started has what it says).
bool timing_all(const Spec& s);

class WrkSummary {
public:
    // One repetition's counters (a delta since the reset), added to its phase.
    void add(const std::string& phase, const collect::Snapshot& counters);
    // Per phase in `order` (phases with nothing kept are named as such): a title line with the
    // repetitions, the timed acquisitions and the peak, then the table. Empty when order is.
    std::string text(const std::vector<std::string>& order) const;

private:
    struct PhaseTotals {
        uint32_t reps = 0;
        uint64_t hist[kHistBuckets] = {};
        uint64_t overflow = 0;
    };
    std::map<std::string, PhaseTotals> phases_;
};

}  // namespace spinlab::run
