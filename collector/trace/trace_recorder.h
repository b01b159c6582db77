// collector/trace/trace_recorder.h: drains a trace session from the shared region's trace area into a
// trace file (spinlab/trace.h's file format). The region is mapped read-write: taking a buffer
// gives it back to its CPU. Every frame goes to disk with one write(2) as soon as its buffer is
// taken, so a guest (or recorder) that dies leaves every whole buffer already taken readable.
// Used by `spinlab-collect trace record` and by spinlab-run (one file per repetition).
//
//   TraceRecorder r(region, file)  - after the session started: the file header
//   r.drain() ... r.drain()        - real-time/no-drop-stall: whatever the CPUs published
//                                    (when nothing was, wait r.poll_interval() before the next)
//   (stop the session)
//   r.finish()                     - the rest (circular: the newest buffers, read in place) and
//                                    the counters frame: the per-CPU loss counters
//
// Every buffer taken from the area (or read in place) and not written to the file is counted in
// its CPU's RealTimeBuffersLost (the host's field of the area): a bad header, a buffer torn while
// a circular session was read, a file write that failed (a full disk: the frame is cut off, the
// file still ends on a whole frame, and the recording goes on counting). So, once a session is
// stopped and drained: buffers in the file + RealTimeBuffersLost = buffers the host took.
//
// The guest is not trusted: the trace area's header is copied and checked once here (the
// geometry: CPUs, buffers, sizes, offsets, against the section's size), and every address
// comes from that copy. A guest whose counters break the protocol makes drain() and finish()
// throw CollectError(kExitCorrupt) naming the CPU and the field; every frame written before
// stays in the file, and abandon() then closes it with the counters frame.
#pragma once
#include <spinlab/trace.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spinlab::collect {

class TraceRecorder {
public:
    // Maps `region_path` read-write, reads the trace area's header (retrying while a start is
    // in progress) and writes the file header to `file`. Throws CollectError.
    TraceRecorder(const std::string& region_path, const std::string& file, bool fsync_each = false);
    ~TraceRecorder();
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;

    // Takes the published buffers of every CPU into the file, at most buffers_per_cpu of each
    // per call (so a caller can stop between calls however fast the guest publishes); true
    // when there was any. Does nothing in circular mode (the CPUs overwrite; finish() reads
    // what is left).
    bool drain();
    // How long a caller whose drain() found nothing should wait before the next: a quarter of
    // the time one CPU's buffers take to fill at the fastest rate drained lately, between 50 us
    // and 2 ms (2 ms while nothing comes). A fixed 5 ms lost events from 0.8 GB/s up (a CPU's
    // 64 x 64 KiB filled while the recorder slept).
    std::chrono::microseconds poll_interval() const;
    // After the session stopped (or the guest died): the last buffers, then the counters frame.
    void finish();
    // After drain() or finish() threw: the counters frame only (nothing more is read from the
    // buffers), so the file ends as a finished one does.
    void abandon();

    const TraceSessionInformation& session() const;  // as the area described it at the start
    uint32_t cpu_count() const;
    uint64_t buffers() const;   // frames of buffers written
    uint64_t events() const;    // events in them
    uint64_t bytes() const;     // buffer bytes written
    uint64_t damaged() const;   // buffers taken but not written: bad header
    // Buffers taken or read but not in the file (bad header, torn, write failed): what this
    // recorder added to RealTimeBuffersLost.
    uint64_t undelivered() const;
    // The first failed file write ("cannot write FILE: No space left on device"), or "".
    const std::string& write_error() const;
    // NumberOfBuffers per CPU now (each CPU's buffers_allocated).
    std::vector<uint32_t> buffers_allocated() const;
    // The CPUs' loss counters now (exact once the session stopped).
    std::vector<TraceCpuCounters> counters() const;
    TraceLossCounters totals() const;
    bool region_unlinked() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// NumberOfBuffers per CPU of the session in the region's trace area (read-only; for `trace
// status`), or empty when the region or its trace area cannot be read (no session yet, busy).
std::vector<uint32_t> trace_buffers_allocated(const std::string& region_path);

// `trace flush --output FILE` of a circular session (after the guest flushed every CPU): the
// flight recorder's contents now, read in place into FILE with the counters frame; the session
// keeps running. Throws CollectError(kExitUsage) for a session in another mode.
struct TraceSnapshot {
    uint64_t session_id;
    uint64_t buffers;
    uint64_t events;
    uint64_t undelivered;
    std::string write_error;
    TraceLossCounters totals;
};
TraceSnapshot write_trace_snapshot(const std::string& region_path, const std::string& file);

}  // namespace spinlab::collect
