// collector/record_file.cc: see record_file.h.
#include "record_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "clock_fit_json.h"
#include "hostlib/error.h"
#include "hostlib/json_writer.h"
#include "hostlib/results_contract.h"
#include "report_format.h"

namespace spinlab::collect {

namespace key = spinlab::results::key;

RecordFile::RecordFile(const std::string& path, bool fsync_each) : path_(path), fsync_(fsync_each) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw CollectError(kExitFailure, "cannot create the record file " + path + " (" +
                                             std::strerror(errno) + ")");
}

RecordFile::~RecordFile() {
    if (fd_ >= 0) ::close(fd_);
}

void RecordFile::write_line(const std::string& json) {
    std::string line = json + "\n";
    const char* p = line.data();
    size_t n = line.size();
    while (n > 0) {  // a regular file takes it in one write unless the disk is full
        ssize_t w = ::write(fd_, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            throw CollectError(kExitFailure, "cannot write the record file " + path_ + " (" +
                                                 std::strerror(errno) + ")");
        p += w;
        n -= size_t(w);
    }
    if (fsync_) ::fdatasync(fd_);
}

std::string record_header_json(const RecordHeader& h) {
    JsonWriter w;
    w.begin_object()
        .field("type", "header").field(key::format, "spinlab-record")
        .field("version", kRecordFormatVersion).field(key::source, h.source)
        .field("attach", h.attach).field(key::cpus, h.cpus).field(key::tsc_hz, h.tsc_hz)
        .field("generation", h.generation).field("interval_s", h.interval_s)
        .field("started_ns", h.started_ns).field("hist_buckets", kHistBuckets);
    w.key(key::classes).begin_array();
    for (uint32_t id = 0; id < h.names.names.size(); ++id)
        if (!h.names.names[id].empty())
            w.begin_object().field("id", id).field(key::name, h.names.names[id]).end_object();
    w.end_array().end_object();
    return w.take();
}

std::string record_snapshot_json(uint64_t seq, const Snapshot& s,
                                 const std::optional<ClockSample>& clock) {
    JsonWriter w;
    w.begin_object()
        .field("type", "snapshot").field("seq", seq).field("host_ns", s.host_ns)
        .field("host_tsc", s.host_tsc).field("read_cycles", s.read_cycles);
    w.key(key::clock);
    if (clock) {
        w.begin_object().field(key::guest_tsc, clock->guest_tsc)
            .field("host_before", clock->host_before).field("host_after", clock->host_after)
            .end_object();
    } else {
        w.begin_object().end_object();
    }
    w.key(key::cpus).begin_array();
    for (const CpuSnapshot& c : s.cpus) {
        w.begin_object().field(key::cpu, c.cpu).field("resets", c.resets);
        w.field(key::acquisitions_counted, acquisitions_counted_name(c.acquisitions_counted));
        pv_fields(w, c.pv);
        w.key(key::classes).begin_array();
        for (uint32_t id = 0; id < c.classes.size(); ++id) {
            if (c.classes[id].acquisitions == 0) continue;
            w.begin_object().field("id", id).key("perf");
            perf_json(w, c.classes[id]);
            w.end_object();
        }
        w.end_array().end_object();
    }
    w.end_array().end_object();
    return w.take();
}

std::string record_end_json(const std::string& reason, uint64_t snapshots, const ClockFit& fit) {
    JsonWriter w;
    w.begin_object().field("type", "end").field(key::reason, reason).field("snapshots", snapshots);
    // clock.json's shape (clock_fit_json.h) after "ok"; without a fit, why not.
    w.key("clock_fit").begin_object().field("ok", fit.ok);
    if (fit.ok) write_clock_fit(w, fit);
    else w.field("error", fit.error);
    w.end_object().end_object();
    return w.take();
}

}  // namespace spinlab::collect
