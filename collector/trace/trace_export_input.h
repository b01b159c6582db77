// collector/trace/trace_export_input.h: what `trace export` reads: a trace file (every checked buffer,
// per CPU in sequence order, and the last loss counters), and optionally the run's clock.json
// (guest TSC -> host TSC) and timeline.csv (host vCPU on/off intervals), in the formats of the
// results directory contract (analysis/README.md).
#pragma once
#include <spinlab/trace.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "clock_sync.h"

namespace spinlab::collect {

// One published buffer that passed the parser: its header and its events (bytes_used bytes).
struct TraceBuffer {
    TraceBufferHeader header;
    std::vector<uint8_t> bytes;
};

struct LoadedTrace {
    TraceFileHeader header;
    std::vector<std::vector<TraceBuffer>> cpus;  // [cpu], by sequence, no duplicates
    std::vector<TraceCpuCounters> counters;      // the last counters frame (empty: none)
    uint64_t damaged = 0;                        // buffers skipped (bad CRC or parse)
    bool truncated = false;                      // the file ends in the middle of a frame
};

// Reads a trace file. Damage is reported on err and skipped (every whole buffer is kept);
// throws CollectError when the file is not a trace file at all.
LoadedTrace load_trace(const std::string& path, std::ostream& err);

// clock.json as a fit for map_guest (points and the straight-line summary). The host's TSC rate
// (host_tsc_hz) comes from clock.json, or for one written before it was stated there from the
// meta.json beside it (host.tsc_hz); neither: host_tsc_hz stays 0. Throws CollectError naming
// the file and what is wrong.
ClockFit read_clock_json(const std::string& path);

// One row of timeline.csv.
struct TimelineRow {
    uint32_t vcpu;
    uint64_t tid;
    std::string state;  // on | off | frozen
    uint64_t start_host_tsc;
    uint64_t end_host_tsc;
    std::string phase;
    uint32_t rep;
};
std::vector<TimelineRow> read_timeline_csv(const std::string& path);

}  // namespace spinlab::collect
