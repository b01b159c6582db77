// collector/trace/trace_export.h: one trace file exported in one format (`trace export`, and the
// runner's [trace] export for every repetition).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "clock_sync.h"
#include "trace_export_input.h"

namespace spinlab::collect {

enum class TraceExportFormat { kCtf, kPerfetto, kColumns };

// "ctf" | "perfetto" | "columns"; throws CollectError(kExitUsage) naming anything else.
TraceExportFormat parse_trace_export_format(const std::string& name);
const char* trace_export_format_name(TraceExportFormat f);

struct TraceExportResult {
    uint64_t buffers = 0;
    uint32_t cpus = 0;
    bool damaged = false;  // buffers skipped or the file cut short (named on err); the rest exported
};

// Reads `trace`, writes `out` (a directory for CTF and columns, a file for Perfetto). clock and
// timeline may be null (the clock is used by CTF and Perfetto, the timeline by Perfetto only, and
// only with a clock; the columns carry guest TSC as it is). Throws CollectError
// when the trace cannot be read at all or the output cannot be written.
TraceExportResult export_trace(const std::string& trace, TraceExportFormat format, const std::string& out,
                               const ClockFit* clock, const std::vector<TimelineRow>* timeline,
                               std::ostream& err);

}  // namespace spinlab::collect
