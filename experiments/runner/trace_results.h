// experiments/runner/trace_results.h: what a repetition's trace file (spinlab/trace.h's format,
// written by the collector's TraceRecorder) gives the results: the session as it ran, the exact
// loss counters per CPU and in total (the file's counters frame), and the long waits: every
// spinlock event whose long-wait rule fired (each contended wait >= longwait=, unsampled).
// Pure apart from reading the file; tested with files written by the real writer code.
#pragma once
#include <spinlab/trace.h>

#include <cstdint>
#include <string>
#include <vector>

#include "results.h"
#include "snapshot.h"

namespace spinlab::run {

// The long wait a long-wait spinlock event stands for, `names` naming its class.
LongWaitEntry long_wait_from_event(const TraceSpinlockEvent& e, const collect::ClassNames& names);

// Reads `path` (relative name `file` goes into the record). Long waits go to *long_waits
// (entries appended; dropped = the session's EventsLost, see TraceRecord). Throws
// std::runtime_error naming the file when it cannot be read or its header is bad; a damaged
// buffer or a cut-off tail is counted (damaged_frames), not fatal: the rest is kept.
TraceRecord read_trace_file(const std::string& path, const std::string& file,
                            const collect::ClassNames& names, LongWaits* long_waits);

// Adds one CPU's loss counters to a total (the file's counters frame holds them per CPU).
void add_loss(TraceLossCounters& total, const TraceLossCounters& cpu);

}  // namespace spinlab::run
