// collector/watch_command.cc: `watch`: every interval, the deltas since the previous snapshot,
// printed like bcc's tools with -i.
#include <ctime>

#include "commands.h"
#include "hostlib/error.h"
#include "report_format.h"
#include "series.h"

namespace spinlab::collect {
namespace {

std::string clock_time(uint64_t ns) {
    time_t t = time_t(ns / 1'000'000'000ull);
    tm tmv;
    localtime_r(&t, &tmv);
    char b[16];
    strftime(b, sizeof b, "%H:%M:%S", &tmv);
    return b;
}

}  // namespace

int run_watch(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    std::string warning;
    ClassNames names = s.class_names(&warning);
    if (!warning.empty()) err << "spinlab-collect: " << warning << "\n";
    if (s.snapshots_from_region()) s.drop_channel();  // let other clients use the channel
    const OutputFormat fmt = parse_format(c.format);
    std::optional<Snapshot> previous;
    SeriesEnd end = run_series(s, c, [&](uint64_t seq, const Snapshot& snap,
                                         const std::optional<ClockSample>&) {
        if (!previous) {  // the baseline: deltas start from here
            previous = snap;
            return;
        }
        Snapshot d = snapshot_delta(snap, *previous);
        double secs = double(snap.host_ns - previous->host_ns) / 1e9;
        previous = snap;
        char title[96];
        std::snprintf(title, sizeof title, "%s  interval %llu  %.2f s", clock_time(snap.host_ns).c_str(),
                      (unsigned long long)seq, secs);
        QueryView v{&d, &names, classes_to_show(c, names, d), c.per_cpu,
                    fmt == OutputFormat::kTable ? title : ""};
        out << format_query(v, fmt) << std::flush;
    });
    if (end.corrupt) {  // every interval before it was printed
        err << "spinlab-collect: " << end.reason << "\n";
        return kExitCorrupt;
    }
    if (end.guest_gone) {
        err << "spinlab-collect: " << end.reason << "\n";
        return kExitGuestGone;
    }
    return 0;
}

}  // namespace spinlab::collect
