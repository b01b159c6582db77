// collector/series.h: the loop watch and record share: take a snapshot every interval until
// --count, --duration, a stop signal, the guest going away, or a corrupt region (a
// CollectError(kExitCorrupt) from a snapshot or a clock read ends the series with corrupt set,
// so the caller still closes its output with everything taken before).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "clock_sync.h"
#include "options.h"
#include "session.h"

namespace spinlab::collect {

struct SeriesEnd {
    std::string reason;   // "count reached", "duration reached", "stopped by signal", or why
                          // the guest is considered gone
    bool guest_gone = false;
    bool corrupt = false;  // the region broke its rules (reason: the kExitCorrupt message)
    uint64_t snapshots = 0;
    std::vector<ClockSample> clock_samples;
};

// Calls on_snapshot(seq, snapshot, clock sample) for every snapshot taken.
SeriesEnd run_series(Session& s, const Config& c,
                     const std::function<void(uint64_t, const Snapshot&,
                                              const std::optional<ClockSample>&)>& on_snapshot);

}  // namespace spinlab::collect
