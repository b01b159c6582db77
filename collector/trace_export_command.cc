// collector/trace_export_command.cc: `trace export FILE --format ctf|perfetto -o OUT
// [--clock clock.json] [--timeline timeline.csv]`: a trace file in the formats other tools open.
// No guest is needed. Damaged buffers are named on stderr and left out; the rest is exported
// (exit 1 then, so scripts notice).
#include <fstream>

#include "commands.h"
#include "error.h"
#include "options.h"
#include "trace_export_ctf.h"
#include "trace_export_input.h"
#include "trace_export_perfetto.h"

namespace spinlab::collect {

int run_trace_export(const Config& c, std::ostream& out, std::ostream& err) {
    const LoadedTrace t = load_trace(c.trace.file, err);
    std::optional<ClockFit> clock;
    if (!c.trace.clock_json.empty()) clock = read_clock_json(c.trace.clock_json);
    std::optional<std::vector<TimelineRow>> timeline;
    if (!c.trace.timeline_csv.empty()) timeline = read_timeline_csv(c.trace.timeline_csv);
    uint64_t buffers = 0;
    for (const auto& b : t.cpus) buffers += b.size();
    if (c.format == "ctf") {
        write_ctf(t, clock ? &*clock : nullptr, c.output);
    } else {
        const std::string json = perfetto_json(t, clock ? &*clock : nullptr, timeline ? &*timeline : nullptr);
        std::ofstream f(c.output, std::ios::binary | std::ios::trunc);
        f << json;
        f.close();
        if (!f) throw CollectError(kExitFailure, "cannot write " + c.output);
    }
    out << "trace export: " << buffers << " buffers of " << t.header.cpu_count << " CPUs to "
        << c.output << " (" << c.format << (clock ? ", host time through " + c.trace.clock_json : "")
        << ")\n";
    return t.damaged || t.truncated ? kExitFailure : 0;
}

}  // namespace spinlab::collect
