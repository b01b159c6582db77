// experiments/runner/trace_results.cc: see trace_results.h.
#include "trace_results.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "locktrace/buffer_parser.h"
#include "locktrace/trace_file.h"

namespace spinlab::run {

namespace lt = locktrace;

LongWaitEntry long_wait_from_event(const TraceSpinlockEvent& e, const collect::ClassNames& names) {
    LongWaitEntry w;
    w.cpu = e.h.cpu;
    w.class_name = names.name(e.class_id);
    // The event is written at release; the wait ended when the lock was taken.
    w.wait_cycles = e.wait_cycles;
    w.start_tsc = e.acquire_tsc >= e.wait_cycles ? e.acquire_tsc - e.wait_cycles : 0;
    if (e.holder_cpu_start != kNoCpu) w.holder_cpu = e.holder_cpu_start;
    if (e.holder_cpu_end != kNoCpu) w.holder_end_cpu = e.holder_cpu_end;
    w.lhp_class = e.lhp_class < kLhpClassCount ? e.lhp_class : uint32_t(LhpClass::kUnknown);
    return w;
}

TraceRecord read_trace_file(const std::string& path, const std::string& file,
                            const collect::ClassNames& names, LongWaits* long_waits) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the trace file " + path);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    TraceFileHeader fh;
    if (const lt::FileError e = lt::parse_file_header(data.data(), data.size(), &fh); e != lt::FileError::kNone)
        throw std::runtime_error("trace file " + path + ": " + lt::file_error_name(e));
    TraceRecord r;
    r.file = file;
    r.session = fh.session;
    size_t off = sizeof fh;
    lt::FrameView f;
    lt::FileError e;
    while ((e = lt::next_frame(data.data(), data.size(), &off, &f)) == lt::FileError::kNone) {
        if (f.kind == TraceFrameKind::kCounters) {
            r.cpus.clear();
            r.totals = {};
            for (uint32_t i = 0; i + sizeof(TraceCpuCounters) <= f.length; i += sizeof(TraceCpuCounters)) {
                TraceCpuCounters k;
                std::memcpy(&k, f.payload + i, sizeof k);
                r.cpus.push_back(k);
                add_loss(r.totals, k.counters);
            }
            r.counters_found = true;
            continue;
        }
        lt::BufferView v;
        if (lt::parse_buffer(f.payload, f.length, &v) != lt::BufferError::kNone) {
            r.damaged_frames++;
            continue;
        }
        r.buffers++;
        lt::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
            r.events++;
            if (h.type != uint16_t(TraceEventType::kSpinlock) || long_waits == nullptr) return;
            TraceSpinlockEvent s;
            std::memcpy(&s, ev, sizeof s);
            if (s.rules & kTraceRuleLongWait) long_waits->entries.push_back(long_wait_from_event(s, names));
        });
    }
    if (e != lt::FileError::kEnd) r.damaged_frames++;  // a tail cut short: what came before counts
    if (long_waits) long_waits->dropped += r.totals.events_lost;
    return r;
}

void add_loss(TraceLossCounters& total, const TraceLossCounters& cpu) {
    total.events_attempted += cpu.events_attempted;
    total.events_written += cpu.events_written;
    total.events_lost += cpu.events_lost;
    total.buffers_written += cpu.buffers_written;
    total.log_buffers_lost += cpu.log_buffers_lost;
    total.realtime_buffers_lost += cpu.realtime_buffers_lost;
}

}  // namespace spinlab::run
