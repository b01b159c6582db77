// collector/trace/trace_export_command.cc: `trace export FILE --format ctf|perfetto|columns -o OUT
// [--clock clock.json] [--timeline timeline.csv]`: a trace file in the formats other tools open
// (columns: NumPy tables for the analysis).
// No guest is needed. Damaged buffers are named on stderr and left out; the rest is exported
// (exit 1 then, so scripts notice).
#include <optional>

#include "commands.h"
#include "hostlib/error.h"
#include "options.h"
#include "trace_export.h"

namespace spinlab::collect {

int run_trace_export(const Config& c, std::ostream& out, std::ostream& err) {
    const TraceExportFormat format = parse_trace_export_format(c.format);
    std::optional<ClockFit> clock;
    if (!c.trace.clock_json.empty()) clock = read_clock_json(c.trace.clock_json);
    std::optional<std::vector<TimelineRow>> timeline;
    if (!c.trace.timeline_csv.empty()) timeline = read_timeline_csv(c.trace.timeline_csv);
    const TraceExportResult r = export_trace(c.trace.file, format, c.output, clock ? &*clock : nullptr,
                                             timeline ? &*timeline : nullptr, err);
    out << "trace export: " << r.buffers << " buffers of " << r.cpus << " CPUs to " << c.output << " ("
        << c.format << (clock ? ", host time through " + c.trace.clock_json : "") << ")\n";
    return r.damaged ? kExitFailure : 0;
}

}  // namespace spinlab::collect
