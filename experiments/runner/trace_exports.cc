// experiments/runner/trace_exports.cc: see trace_exports.h.
#include "trace_exports.h"

#include <filesystem>
#include <optional>
#include <sstream>

#include "hostlib/error.h"
#include "trace/trace_export.h"
#include "trace/trace_export_input.h"

namespace spinlab::run {

std::string export_repetition(const std::string& dir, const std::string& name,
                              const std::vector<std::string>& formats, const collect::ClockFit* fit) {
    namespace fs = std::filesystem;
    if (formats.empty()) return "";
    const std::string trace = dir + "/snapshots/" + name + ".trace";
    std::string problems;
    std::optional<std::vector<collect::TimelineRow>> timeline;
    const std::string tl = dir + "/timeline.csv";
    if (fs::exists(tl)) {
        try {
            timeline = collect::read_timeline_csv(tl);
        } catch (const collect::CollectError& e) {
            problems += std::string("the Perfetto export has no host tracks: ") + e.what() + "; ";
        }
    }
    const collect::ClockFit* clock = fit != nullptr && fit->ok ? fit : nullptr;
    std::error_code ec;
    fs::create_directories(dir + "/" + kTraceExportDir, ec);
    for (const std::string& f : formats) {
        const collect::TraceExportFormat format = collect::parse_trace_export_format(f);
        const std::string out = dir + "/" + kTraceExportDir + "/" + name +
                                (format == collect::TraceExportFormat::kCtf ? ".ctf" : ".json");
        std::ostringstream err;
        try {
            const collect::TraceExportResult r =
                collect::export_trace(trace, format, out, clock, timeline ? &*timeline : nullptr, err);
            if (r.damaged) {
                std::string why = err.str();
                for (char& c : why)
                    if (c == '\n') c = ' ';
                problems += name + ".trace is damaged, the " + f + " export has the rest: " + why + "; ";
            }
        } catch (const collect::CollectError& e) {
            problems += std::string("no ") + f + " export of " + name + ".trace: " + e.what() + "; ";
        }
    }
    if (!clock) problems += "the exports of " + name + " are in guest time (no clock correlation yet); ";
    while (!problems.empty() && (problems.back() == ' ' || problems.back() == ';' || problems.back() == '\n'))
        problems.pop_back();
    return problems;
}

}  // namespace spinlab::run
