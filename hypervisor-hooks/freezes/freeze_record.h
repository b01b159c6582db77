// The freeze record: one CSV row per freeze, with the planned window, the requests we made,
// the kernel's confirmation, and the effective window (effective_window.h). Every time is
// given in host TSC (the clock of the timeline and the guest counters) and in CLOCK_MONOTONIC
// ns. The one writer of this format; its columns are documented in README.md.
//
//   seq,tid,vcpu,planned_begin_tsc,planned_end_tsc,begin_tsc,marked_tsc,frozen_tsc,end_tsc,
//   thawed_tsc,stopped_tsc,resumed_tsc,effective,planned_begin_ns,planned_end_ns,begin_ns,marked_ns,
//   frozen_ns,end_ns,thawed_ns,stopped_ns,resumed_ns
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "effective_window.h"

namespace spinlab::load {

struct FreezeRecord {
    uint64_t seq = 0;
    int tid = 0;
    int vcpu = -1;
    uint64_t planned_begin_tsc = 0, planned_end_tsc = 0;  // the schedule's window
    uint64_t begin_tsc = 0;   // just before the freeze request (write)
    uint64_t marked_tsc = 0;  // just after the freeze write returned: the thread is marked by then
    uint64_t frozen_tsc = 0;  // when we saw the kernel report the cgroup frozen; 0: not before the thaw
    uint64_t end_tsc = 0;     // just before the thaw request (write)
    uint64_t thawed_tsc = 0;  // just after the thaw write returned: the thread may run from then
    EffectiveWindow effective;
};

// The header line (with newline).
std::string freeze_record_header();
// One row (with newline); `to_ns` maps a TSC value to CLOCK_MONOTONIC ns (0 stays 0).
std::string format_freeze_record(const FreezeRecord& r, const std::function<uint64_t(uint64_t)>& to_ns);

// A window during which a thread ran no user code because it was frozen: one freeze's
// effective window [stopped, resumed).
struct FrozenSpan {
    int tid;
    uint64_t stopped;
    uint64_t resumed;  // UINT64_MAX: not seen running again before tracing ended
};

// The effective windows of a freeze record (the text this file's writer produced): `ok` rows
// give [stopped, resumed); `not-resumed` rows [stopped, forever); rows whose freeze never took
// effect or whose thread had no events give none. Throws LoadError naming the line and column
// that do not parse.
std::vector<FrozenSpan> read_frozen_spans(const std::string& record_csv);

}  // namespace spinlab::load
