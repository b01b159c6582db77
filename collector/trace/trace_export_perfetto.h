// collector/trace/trace_export_perfetto.h: a trace file as Chrome trace-event JSON (the "JSON Object
// Format" of the Trace Event Format document), which the Perfetto UI and chrome://tracing open.
//
// Tracks (pid/tid of the JSON; names in "M" metadata events):
//   pid 1 "guest CPUs", tid = CPU       complete slices ("X") of the thread running, from the
//                                       context switches; counter "contended waits/s" ("C"),
//                                       one series per lock class, over 10 ms of trace time
//   pid 2 "guest threads", tid = thread  spinlock waits as "X" slices on the waiter's track (no
//                                       thread: a track per CPU, tid 1e9 + CPU),
//                                       each with a flow ("s" at the wait's start, "f" bound to
//                                       the enclosing slice on the holder CPU's track when the
//                                       lock was handed over)
//   pid 3 "host vCPUs", tid = vCPU       the host timeline's on/off/frozen intervals ("X")
// Timestamps are microseconds (doubles). With a clock correlation every guest TSC is mapped to
// host TSC through it (piecewise, as the analysis does) and host TSC values are used as they
// are, both divided by the host's TSC rate (clock->host_tsc_hz, never the guest's tsc_hz: the
// two sides calibrate their own rates, and 73 ppm apart is 6 ms at the end of an 80 s run):
// one time axis for guest and host tracks. Without one, guest TSC / the trace's tsc_hz.
// otherData.axis_tsc_hz states the rate the axis used. A correlation without a host rate is an
// error (CollectError), not a guess.
#pragma once
#include <string>
#include <vector>

#include "clock_sync.h"
#include "trace_export_input.h"

namespace spinlab::collect {

// Contended waits are counted in bins of this many microseconds for the counter tracks.
inline constexpr double kPerfettoCounterBinUs = 10000;

std::string perfetto_json(const LoadedTrace& t, const ClockFit* clock,
                          const std::vector<TimelineRow>* timeline);

}  // namespace spinlab::collect
