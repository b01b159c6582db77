// experiments/runner/trace_exports.h: [trace] export: a repetition's trace file in the formats
// other tools open, written right after the repetition (so a partial run keeps the exports of
// its finished repetitions) through the collector's export_trace, with the run's clock
// correlation so far and its host timeline:
//   <results>/trace-export/<phase>-r<rep>.ctf/    CTF 1.8 (babeltrace2, Trace Compass)
//   <results>/trace-export/<phase>-r<rep>.json    Chrome trace-event JSON (Perfetto UI)
// Not in snapshots/: the analysis reads every snapshots/*.json as a snapshot.
#pragma once
#include <string>
#include <vector>

#include "clock_sync.h"

namespace spinlab::run {

inline constexpr const char* kTraceExportDir = "trace-export";

// Exports `dir`/snapshots/`name`.trace in every format of `formats` ("ctf", "perfetto").
// fit: the clock correlation (null or !ok: guest time only). Returns "" or what went wrong (the
// run goes on; the trace file stays).
std::string export_repetition(const std::string& dir, const std::string& name,
                              const std::vector<std::string>& formats, const collect::ClockFit* fit);

}  // namespace spinlab::run
