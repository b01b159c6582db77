// collector/testing/trace_script.cc: writes a trace file from a hand-made script, through the
// real code: the kernel's per-CPU writer (locktrace/writer.h) into a trace area in host memory,
// the host's drain (locktrace/drain.h), and the trace file frames (locktrace/trace_file.h), as
// `trace record` writes them. The tests of `trace export` and of the analysis make their traces
// with it, so no binary trace is checked in.
//
//   trace_script SCRIPT OUT.trace
//
// Script lines ('#' starts a comment):
//   config cpus=N tsc_hz=HZ buffer_size=B buffers=N mode=real-time|circular session=ID start=TSC
//                                   (first; defaults 2, 1e9, 4096, 4, real-time, 7, 1000)
//   drain on|off                    on (default): the host takes every full buffer after each
//                                   event; off: nobody drains, so real-time loses events
//   flush CPU                       publish CPU's partly filled buffer
//   TSC CPU TID PID TYPE [field=value ...]         one event; TYPE as trace dump names it
//   repeat N STEP TSC CPU TID PID TYPE [field=value ...]   N events, TSC += STEP each
// Stack events (stack-def, stack-ref, ...) take frames=A,B,C after their fields: the frames
// follow the fixed part and nframes is set to their count.
// Fields are the ABI struct members (trace_export_fields.h); numbers in C syntax (0x..), arrays
// comma-separated, char arrays as text. Unset fields are 0. Events between two directives are
// written in TSC order (a stable sort), as a CPU would write them. At the end every CPU flushes its final
// buffer, the host drains (circular: reads in place) and writes the counters frame.
#include <spinlab/trace.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "locktrace/drain.h"
#include "locktrace/test_area.h"
#include "locktrace/trace_file.h"
#include "locktrace/writer.h"
#include "trace/trace_export_fields.h"

namespace lt = spinlab::locktrace;
using namespace spinlab;

namespace {

[[noreturn]] void fail(size_t line, const std::string& what) {
    std::cerr << "trace_script: line " << line << ": " << what << "\n";
    std::exit(2);
}

uint16_t type_of(const std::string& name, size_t line) {
    for (uint16_t t = 1; t <= kTraceEventTypeMax; t++)
        if (name == trace_event_type_name(t)) return t;
    fail(line, "unknown event type '" + name + "'");
}

void set_field(uint8_t* ev, uint16_t type, const std::string& name, const std::string& value, size_t line) {
    for (const collect::PayloadField& f : collect::payload_fields(type)) {
        if (name != f.name) continue;
        if (f.text) {
            if (value.size() > f.count) fail(line, name + " is longer than " + std::to_string(f.count));
            std::memcpy(ev + f.offset, value.data(), value.size());
            return;
        }
        std::stringstream ss(value);
        std::string item;
        uint32_t i = 0;
        while (std::getline(ss, item, ',')) {
            if (i >= f.count) fail(line, name + " has " + std::to_string(f.count) + " elements");
            const uint64_t v = std::stoull(item, nullptr, 0);
            std::memcpy(ev + f.offset + i * f.width, &v, f.width);  // little endian
            i++;
        }
        return;
    }
    fail(line, std::string("event type ") + trace_event_type_name(type) + " has no field '" + name + "'");
}

// A stack event's frames=a,b,c: appended after the fixed part; nframes set to their count.
void add_frames(std::vector<uint8_t>& ev, const std::string& value, size_t line) {
    std::stringstream ss(value);
    uint16_t n = 0;
    for (std::string item; std::getline(ss, item, ',');) {
        if (n == kTraceMaxStackFrames) fail(line, "more than " + std::to_string(kTraceMaxStackFrames) + " frames");
        const uint64_t v = std::stoull(item, nullptr, 0);
        const size_t at = ev.size();
        ev.resize(at + 8);
        std::memcpy(ev.data() + at, &v, 8);
        n++;
    }
    std::memcpy(ev.data() + offsetof(TraceStackEvent, nframes), &n, sizeof n);
}

struct Out {
    std::vector<uint8_t> bytes;
    void add(const void* p, size_t n) {
        bytes.insert(bytes.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    }
    void frame(TraceFrameKind kind, const void* p, uint32_t n) {
        const TraceFrameHeader h = lt::make_frame_header(kind, p, n);
        add(&h, sizeof h);
        add(p, n);
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: trace_script SCRIPT OUT.trace\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::cerr << "trace_script: cannot read " << argv[1] << "\n";
        return 2;
    }
    std::map<std::string, std::string> cfg = {{"cpus", "2"},         {"tsc_hz", "1000000000"},
                                              {"buffer_size", "4096"}, {"buffers", "4"},
                                              {"mode", "real-time"},   {"session", "7"},
                                              {"start", "1000"}};
    std::vector<std::pair<size_t, std::string>> lines;
    size_t n = 0;
    for (std::string l; std::getline(in, l);) {
        n++;
        if (auto h = l.find('#'); h != std::string::npos) l.resize(h);
        if (l.find_first_not_of(" \t") == std::string::npos) continue;
        if (l.rfind("config", 0) == 0) {
            std::stringstream ss(l.substr(6));
            for (std::string kv; ss >> kv;) {
                const auto eq = kv.find('=');
                if (eq == std::string::npos || !cfg.count(kv.substr(0, eq))) fail(n, "bad config '" + kv + "'");
                cfg[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
            continue;
        }
        lines.push_back({n, l});
    }
    const uint32_t cpus = std::stoul(cfg["cpus"]);
    const TraceLoggerMode mode = cfg["mode"] == "circular" ? TraceLoggerMode::kCircular : TraceLoggerMode::kRealTime;
    auto area = lt::testing::make_area(cpus, std::stoul(cfg["buffer_size"]), std::stoul(cfg["buffers"]),
                                       mode, std::stoull(cfg["session"]));
    // make_area starts the session at TSC 1000; the script may say otherwise.
    auto* ah = static_cast<TraceAreaHeader*>(area.area());
    ah->session.start_tsc = std::stoull(cfg["start"]);
    std::vector<lt::Writer> w(cpus);
    for (uint32_t c = 0; c < cpus; c++) lt::writer_arm(w[c], area.area(), c);

    Out out;
    const TraceFileHeader fh = lt::make_file_header(ah->session, cpus, std::stoull(cfg["tsc_hz"]));
    out.add(&fh, sizeof fh);
    std::vector<uint8_t> buf(ah->session.buffer_size);
    auto drain = [&] {
        if (mode == TraceLoggerMode::kCircular) return;
        for (uint32_t c = 0; c < cpus; c++) {
            uint32_t len = 0;
            while (lt::take_buffer(area.area(), *ah, c, buf.data(), &len) == lt::TakeResult::kTaken)
                out.frame(TraceFrameKind::kBuffer, buf.data(), len);
        }
    };

    // Expand the lines into operations; events between two directives are written in TSC
    // order (stable), as a CPU writes them, whatever order the script lists them in.
    struct Op {
        int kind;  // 0 event, 1 drain on, 2 drain off, 3 flush
        uint64_t tsc;
        uint32_t cpu, tid, pid;
        uint16_t type;
        std::vector<uint8_t> ev;
    };
    std::vector<Op> ops;
    size_t segment = 0;
    auto sort_segment = [&] {
        std::stable_sort(ops.begin() + segment, ops.end(), [](const Op& a, const Op& b) { return a.tsc < b.tsc; });
    };
    for (const auto& [line, text] : lines) {
        std::stringstream ss(text);
        std::vector<std::string> tok;
        for (std::string t; ss >> t;) tok.push_back(t);
        if (tok[0] == "drain" || tok[0] == "flush") {
            sort_segment();
            if (tok[0] == "drain") ops.push_back({tok.size() > 1 && tok[1] == "on" ? 1 : 2, 0, 0, 0, 0, 0, {}});
            else ops.push_back({3, 0, uint32_t(std::stoul(tok.at(1))), 0, 0, 0, {}});
            segment = ops.size();
            continue;
        }
        uint64_t repeat = 1, step = 0;
        size_t at = 0;
        if (tok[0] == "repeat") {
            if (tok.size() < 3) fail(line, "repeat N STEP EVENT");
            repeat = std::stoull(tok[1]), step = std::stoull(tok[2]), at = 3;
        }
        if (tok.size() < at + 5) fail(line, "an event is TSC CPU TID PID TYPE [field=value ...]");
        const uint64_t tsc0 = std::stoull(tok[at], nullptr, 0);
        const uint32_t cpu = std::stoul(tok[at + 1]);
        if (cpu >= cpus) fail(line, "cpu " + std::to_string(cpu) + " >= cpus");
        const uint32_t tid = std::stoul(tok[at + 2]), pid = std::stoul(tok[at + 3]);
        const uint16_t type = type_of(tok[at + 4], line);
        std::vector<uint8_t> ev(trace_event_size(type), 0);
        for (size_t i = at + 5; i < tok.size(); i++) {
            const auto eq = tok[i].find('=');
            if (eq == std::string::npos) fail(line, "expected field=value, not '" + tok[i] + "'");
            if (trace_event_has_frames(type) && tok[i].substr(0, eq) == collect::kStackFramesField) {
                add_frames(ev, tok[i].substr(eq + 1), line);
                continue;
            }
            set_field(ev.data(), type, tok[i].substr(0, eq), tok[i].substr(eq + 1), line);
        }
        for (uint64_t r = 0; r < repeat; r++) ops.push_back({0, tsc0 + r * step, cpu, tid, pid, type, ev});
    }
    sort_segment();

    bool draining = true;
    for (const Op& op : ops) {
        if (op.kind == 1 || op.kind == 2) {
            draining = op.kind == 1;
            continue;
        }
        if (op.kind == 3) {
            lt::flush(w[op.cpu], 0);
            if (draining) drain();
            continue;
        }
        const uint32_t size = uint32_t(op.ev.size());
        if (void* p = lt::begin_write(w[op.cpu], size)) {
            std::memcpy(p, op.ev.data(), size);
            lt::fill_header(*static_cast<TraceEventHeader*>(p), uint16_t(size), TraceEventType(op.type), op.cpu,
                            op.tid, op.pid, op.tsc);
            lt::end_write(w[op.cpu], size, op.tsc);
        }
        if (draining) drain();
    }
    for (uint32_t c = 0; c < cpus; c++) lt::flush(w[c], kTraceBufferFinal);
    if (mode == TraceLoggerMode::kCircular) {
        struct Ctx { Out* out; } ctx{&out};
        for (uint32_t c = 0; c < cpus; c++)
            lt::read_in_place(area.area(), *ah, c, buf.data(),
                              [](void* arg, const uint8_t* data, uint32_t len) {
                                  static_cast<Ctx*>(arg)->out->frame(TraceFrameKind::kBuffer, data, len);
                              },
                              &ctx);
    } else {
        drain();
    }
    std::vector<TraceCpuCounters> counters(cpus);
    for (uint32_t c = 0; c < cpus; c++) {
        const TraceCpuControl* k = lt::area_control(area.area(), c);
        counters[c] = {c, 0, {k->events_attempted, k->events_written, k->events_lost, k->buffers_written,
                              k->log_buffers_lost, k->realtime_buffers_lost}};
    }
    out.frame(TraceFrameKind::kCounters, counters.data(), uint32_t(counters.size() * sizeof counters[0]));
    std::ofstream f(argv[2], std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(out.bytes.data()), std::streamsize(out.bytes.size()));
    f.close();
    if (!f) {
        std::cerr << "trace_script: cannot write " << argv[2] << "\n";
        return 1;
    }
    return 0;
}
