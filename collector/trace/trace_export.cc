// collector/trace/trace_export.cc: see trace_export.h.
#include "trace_export.h"

#include <fstream>

#include "hostlib/error.h"
#include "trace_export_columns.h"
#include "trace_export_ctf.h"
#include "trace_export_perfetto.h"

namespace spinlab::collect {

TraceExportFormat parse_trace_export_format(const std::string& name) {
    if (name == "ctf") return TraceExportFormat::kCtf;
    if (name == "perfetto") return TraceExportFormat::kPerfetto;
    if (name == "columns") return TraceExportFormat::kColumns;
    throw CollectError(kExitUsage, "trace export format must be ctf, perfetto or columns, not '" + name + "'");
}

const char* trace_export_format_name(TraceExportFormat f) {
    switch (f) {
        case TraceExportFormat::kCtf:
            return "ctf";
        case TraceExportFormat::kPerfetto:
            return "perfetto";
        case TraceExportFormat::kColumns:
            return "columns";
    }
    return "unknown";
}

TraceExportResult export_trace(const std::string& trace, TraceExportFormat format, const std::string& out,
                               const ClockFit* clock, const std::vector<TimelineRow>* timeline,
                               std::ostream& err) {
    const LoadedTrace t = load_trace(trace, err);
    TraceExportResult r;
    r.cpus = t.header.cpu_count;
    for (const auto& b : t.cpus) r.buffers += b.size();
    r.damaged = t.damaged || t.truncated;
    if (format == TraceExportFormat::kCtf) {
        write_ctf(t, clock, out);
        return r;
    }
    if (format == TraceExportFormat::kColumns) {
        write_columns(t, out);
        return r;
    }
    const std::string json = perfetto_json(t, clock, timeline);
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    f << json;
    f.close();
    if (!f) throw CollectError(kExitFailure, "cannot write " + out);
    return r;
}

}  // namespace spinlab::collect
