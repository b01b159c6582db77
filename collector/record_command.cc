// collector/record_command.cc: `record`: a time series of snapshots to a JSON-lines file
// (record_file.h), each line on disk before the next snapshot is taken. A corrupt region ends
// the series: the end line is still written (its reason is the error), exit status kExitCorrupt.
#include "commands.h"
#include "hostlib/error.h"
#include "hostlib/host_tsc.h"
#include "record_file.h"
#include "series.h"

namespace spinlab::collect {

int run_record(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    RecordFile file(c.output, c.fsync);
    std::string warning;
    RecordHeader h;
    h.names = s.class_names(&warning);
    if (!warning.empty()) err << "spinlab-collect: " << warning << "\n";
    h.source = s.snapshots_from_region() ? "region" : "channel";
    if (s.snapshots_from_region()) s.drop_channel();  // let other clients use the channel
    h.attach = s.paths().what;
    h.interval_s = c.interval_s;
    h.started_ns = realtime_ns();
    if (s.has_region()) {
        h.cpus = s.region().layout().cpu_count;
        h.tsc_hz = s.region().layout().tsc_hz;
        h.generation = s.region().layout().generation;
    }
    file.write_line(record_header_json(h));

    SeriesEnd end = run_series(s, c, [&](uint64_t seq, const Snapshot& snap,
                                         const std::optional<ClockSample>& clock) {
        file.write_line(record_snapshot_json(seq, snap, clock));
    });
    file.write_line(record_end_json(end.reason, end.snapshots, fit_clock(end.clock_samples)));
    if (end.corrupt) {
        err << "spinlab-collect: " << end.reason << "; " << c.output << " holds all "
            << end.snapshots << " snapshots taken before\n";
        return kExitCorrupt;
    }
    if (end.guest_gone) {
        err << "spinlab-collect: " << end.reason << "; " << c.output << " holds all "
            << end.snapshots << " snapshots taken\n";
        return kExitGuestGone;
    }
    out << "recorded " << end.snapshots << " snapshots to " << c.output << " (" << end.reason
        << ")\n";
    return 0;
}

}  // namespace spinlab::collect
