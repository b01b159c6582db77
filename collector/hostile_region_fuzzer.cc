// collector/hostile_region_fuzzer.cc: libFuzzer target for the host tools' reading of a shared
// region the guest changes while they read it (docs/architecture.md, "What the host trusts"): a
// guest rewriting its region while the host read it once crashed the host tools. Two threads: the
// "guest" writes the input's edits into a live in-memory region (a memfd, laid out by the guest's
// own code with buffers published on every CPU), over and over, while the "host" runs what
// spinlab-collect runs on it: RegionReader (attach, snapshot, clock, clock sampling, channel
// stats), the snapshot arithmetic and the query formats (a count far above its total once made a
// divisor 0: SIGFPE), and TraceRecorder (attach, drain, counters, finish: a rewritten trace-area
// header once sent the drain out of bounds: SIGSEGV). Built with ASan and UBSan by scripts/fuzz.sh.
// A CollectError is the wanted outcome for a bad region; a crash, a sanitizer report or another
// exception type is a finding.
//
// Input: 3 bytes of setup (CPUs 1..4 and bit 7: also sample the clock, logger mode, buffers
// per CPU 2..5), then edits of
//   [target u8][offset u16 LE][length u8][length bytes]
// where target picks the part of the region the offset is in (the header, the clock, a CPU's
// perf data, the trace area's header, a CPU's trace control, the buffers, or anywhere), so
// most edits land on a field some reader uses (offsets count 8-byte words). The first half of
// the edits is applied before the host attaches (reproducible); the guest thread applies the
// second half again and again while the host reads, so a field changes after the host checked it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "hostlib/error.h"
#include "region_reader.h"
#include "report_format.h"
#include "snapshot.h"
#include "testing/mem_region.h"
#include "trace/trace_recorder.h"

using namespace spinlab;
using namespace spinlab::collect;

namespace {

struct Edit {
    uint64_t offset;  // into the region, already inside it
    std::vector<uint8_t> bytes;
};

// Where target t's part of the region starts and how long it is.
void target_span(const testing::MemRegion& r, uint8_t t, uint64_t* start, uint64_t* len) {
    const uint64_t trace = r.layout().section(RegionSection::kTrace).offset;
    const uint32_t cpu = (t >> 3) % r.cpus();
    switch (t & 7) {
        case 0: *start = 0, *len = sizeof(RegionHeader); return;
        case 1: *start = r.layout().section(RegionSection::kClock).offset, *len = sizeof(ClockArea); return;
        case 2: *start = uint64_t(reinterpret_cast<uint8_t*>(r.perf(cpu)) - r.base()), *len = 1024; return;
        case 3: *start = trace, *len = sizeof(TraceAreaHeader); return;
        case 4: *start = uint64_t(reinterpret_cast<uint8_t*>(r.control(cpu)) - r.base()), *len = sizeof(TraceCpuControl); return;
        case 5: *start = trace + r.area_header()->buffers_offset, *len = r.size() - *start; return;
        default: *start = 0, *len = r.size(); return;
    }
}

std::vector<Edit> parse_edits(const testing::MemRegion& r, const uint8_t* p, size_t n) {
    std::vector<Edit> out;
    while (n >= 4 && out.size() < 64) {
        const uint8_t target = p[0];
        const uint16_t off = uint16_t(p[1] | p[2] << 8);
        const size_t len = std::min<size_t>(p[3] % 17, n - 4);
        uint64_t start, span;
        target_span(r, target, &start, &span);
        Edit e;
        // In 8-byte words: most edits then replace whole fields (every counter and offset is one).
        e.offset = start + (span >= 8 ? (uint64_t(off) * 8) % (span - span % 8) : 0);
        if (e.offset + len > r.size()) e.offset = r.size() - len;
        e.bytes.assign(p + 4, p + 4 + len);
        out.push_back(std::move(e));
        p += 4 + len;
        n -= 4 + len;
    }
    return out;
}

// The guest's stores: relaxed atomics byte by byte (the host reads these bytes concurrently).
void apply(const testing::MemRegion& r, const Edit& e) {
    for (size_t i = 0; i < e.bytes.size(); i++)
        __atomic_store_n(r.base() + e.offset + i, e.bytes[i], __ATOMIC_RELAXED);
}

void run_region_reader(const testing::MemRegion& r, bool sample_clock) {
    try {
        RegionReader reader(r.path(), std::chrono::milliseconds(0));
        Snapshot a = reader.snapshot();
        reader.clock();
        if (sample_clock) reader.sample_clock(std::chrono::milliseconds(1));  // spins 1 ms
        reader.channel_stats();
        Snapshot b = reader.snapshot();
        Snapshot d = snapshot_delta(b, a);
        ClassNames names;
        for (OutputFormat f : {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kJson}) {
            QueryView v{&d, &names, active_classes(d), true, "fuzz"};
            format_query(v, f);
        }
    } catch (const CollectError&) {
        // the wanted outcome for a bad region
    }
}

void run_trace_recorder(const testing::MemRegion& r) {
    try {
        TraceRecorder rec(r.path(), "/dev/null");
        try {
            for (int i = 0; i < 3; i++) rec.drain();
            rec.counters();
            rec.totals();
            rec.finish();
        } catch (const CollectError&) {
            rec.abandon();
        }
    } catch (const CollectError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    const uint32_t cpus = 1 + data[0] % 4;
    const auto mode = TraceLoggerMode(data[1] % kTraceLoggerModeCount);
    const uint32_t buffers = 2 + data[2] % 4;
    testing::MemRegion r(cpus, buffers, mode);
    for (uint32_t k = 0; k < cpus; k++) r.publish(k, mode == TraceLoggerMode::kCircular ? buffers + 2 : buffers - 1);
    const std::vector<Edit> edits = parse_edits(r, data + 3, size - 3);
    for (size_t i = 0; i < edits.size() / 2; i++) apply(r, edits[i]);

    std::atomic<bool> stop{false};
    std::thread guest([&] {
        while (!stop.load(std::memory_order_relaxed))
            for (size_t i = edits.size() / 2; i < edits.size(); i++) apply(r, edits[i]);
    });
    run_trace_recorder(r);
    run_region_reader(r, data[0] & 0x80);
    stop = true;
    guest.join();
    return 0;
}
