// collector/record_file.h: the time series `record` writes: JSON lines, one object per line.
//
//   {"type":"header", ...}      first: format version, source, CPUs, TSC Hz, class names
//   {"type":"snapshot", ...}    one per interval: host time, clock sample, per-CPU counters
//   {"type":"end", ...}         last, when record ends by itself: why, how many, clock fit
//
// Each line goes to the file with one write(2) as soon as it is complete, so whatever happens
// to the guest (or to the collector, short of the host crashing) the file holds every
// snapshot taken, each whole. A reader must accept a file without an "end" line.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "clock_sync.h"
#include "snapshot.h"

namespace spinlab::collect {

inline constexpr int kRecordFormatVersion = 1;

class RecordFile {
public:
    // Creates or truncates `path`. Throws CollectError naming the path on failure.
    RecordFile(const std::string& path, bool fsync_each);
    ~RecordFile();
    RecordFile(const RecordFile&) = delete;
    RecordFile& operator=(const RecordFile&) = delete;

    // Appends `json` and a newline in one write; throws when the disk refuses.
    void write_line(const std::string& json);

private:
    std::string path_;
    int fd_ = -1;
    bool fsync_;
};

struct RecordHeader {
    std::string source;  // "region" or "channel"
    std::string attach;  // what was attached to
    uint32_t cpus = 0;
    uint64_t tsc_hz = 0;
    uint64_t generation = 0;
    double interval_s = 0;
    uint64_t started_ns = 0;
    ClassNames names;
};

std::string record_header_json(const RecordHeader& h);
// Per CPU, only the classes with acquisitions are written.
std::string record_snapshot_json(uint64_t seq, const Snapshot& s,
                                 const std::optional<ClockSample>& clock);
std::string record_end_json(const std::string& reason, uint64_t snapshots, const ClockFit& fit);

}  // namespace spinlab::collect
