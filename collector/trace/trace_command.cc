// collector/trace/trace_command.cc: `trace start|stop|status|flush|record|dump` (spinlab/trace.h).
//
// start/stop/status/flush go through the control channel (class 0x1F, sub-class kSpinlabTraceSession:
// the guest's one sysinfo handler decides). record drains the trace area of the shared region
// (mapped read-write: the drainer gives buffers back) into a trace file, one frame per buffer,
// each frame on disk with one write(2) as soon as its buffer is taken, so a guest that dies
// leaves every whole buffer it published in the file; a buffer it cannot write (a full disk) is
// counted in RealTimeBuffersLost and the recording goes on. flush makes every CPU publish its
// partly filled buffer; flush --output writes a circular session's snapshot (its buffers now,
// read in place) without stopping it. dump prints a trace file as text.
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

#include "commands.h"
#include "heartbeat.h"
#include "hostlib/error.h"
#include "locktrace/buffer_parser.h"
#include "locktrace/stack_settings.h"
#include "locktrace/trace_file.h"
#include "locktrace/trace_session.h"
#include "symbolizer.h"
#include "trace_control.h"
#include "trace_groups.h"
#include "trace_recorder.h"
#include "trace_stack_dump.h"
#include "trace_text.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;

uint32_t field_at(const TraceSessionInformation& p, uint32_t offset) {
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const uint8_t*>(&p) + offset, sizeof v);
    return v;
}

// The parameters of a start: the defaults, overridden by the options given.
TraceSessionInformation start_params(const Config& c) {
    TraceSessionInformation p = lt::default_session_params();
    p.command = uint32_t(TraceCommand::kStart);
    const TraceOptions& t = c.trace;
    if (t.buffer_size) p.buffer_size = *t.buffer_size;
    if (t.minimum_buffers) p.minimum_buffers = *t.minimum_buffers;
    if (t.maximum_buffers) p.maximum_buffers = *t.maximum_buffers;
    if (t.flush_timer_ms) p.flush_timer_ms = *t.flush_timer_ms;
    if (t.logger_mode) p.logger_mode = *t.logger_mode;
    if (t.enable_flags) p.enable_flags = *t.enable_flags;
    if (t.profile_interval) p.profile_interval = *t.profile_interval;
    return p;
}

// The call-stack settings of a start: the defaults (no stacks), overridden by the options given.
TraceStackInformation stack_params(const Config& c) {
    TraceStackInformation p = lt::default_stack_settings();
    const TraceOptions& t = c.trace;
    if (t.stack_flags) p.stack_flags = *t.stack_flags;
    if (t.stack_caching) p.caching = *t.stack_caching;
    if (t.stack_depth) p.max_depth = *t.stack_depth;
    if (t.bucket_count) p.bucket_count = *t.bucket_count;
    if (t.stack_cache_size) p.cache_size = *t.stack_cache_size;
    return p;
}

bool stack_options_given(const TraceOptions& t) {
    return t.stack_flags || t.stack_caching || t.stack_depth || t.bucket_count || t.stack_cache_size;
}

uint32_t stack_field_at(const TraceStackInformation& p, uint32_t offset) {
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const uint8_t*>(&p) + offset, sizeof v);
    return v;
}

void print_stacks(const TraceStackInformation& q, std::ostream& out) {
    out << "StackFlags       " << trace_groups_text(q.stack_flags) << "\n"
        << "StackCaching     " << (q.caching ? "on" : "off") << "\n"
        << "MaxStackDepth    " << q.max_depth << "\n"
        << "BucketCount      " << q.bucket_count << "\n"
        << "CacheSize        " << q.cache_size << "\n"
        << "stack cache      hits=" << q.hits << " misses=" << q.misses << " uncached=" << q.uncached
        << " evictions=" << q.evictions << " definitions_written=" << q.definitions_written
        << " deletes_written=" << q.deletes_written << " rundowns_written=" << q.rundowns_written
        << " walks_stopped=" << q.walks_stopped << "\n";
}

// per_cpu: each CPU's NumberOfBuffers, read from the region's trace area (empty without one).
void print_session(const TraceSessionInformation& q, const std::vector<uint32_t>& per_cpu, std::ostream& out) {
    out << "state            " << trace_state_name(TraceState(q.state)) << "\n"
        << "session          " << q.session_id << "\n"
        << "BufferSize       " << q.buffer_size << "\n"
        << "MinimumBuffers   " << q.minimum_buffers << "\n"
        << "MaximumBuffers   " << q.maximum_buffers << " (reserved per CPU: " << q.buffers_per_cpu
        << ")\n"
        << "NumberOfBuffers  " << q.number_of_buffers;
    if (!per_cpu.empty()) {
        out << " (per CPU:";
        for (uint32_t n : per_cpu) out << " " << n;
        out << ")";
    }
    out << "\n"
        << "FlushTimer       " << q.flush_timer_ms << " ms\n"
        << "LoggerMode       " << trace_logger_mode_name(TraceLoggerMode(q.logger_mode)) << "\n"
        << "EnableFlags      " << trace_groups_text(q.enable_flags) << "\n"
        << "CPUs             " << q.cpu_count << "\n"
        << "EventsLost       " << q.totals.events_lost << "\n"
        << "BuffersWritten   " << q.totals.buffers_written << "\n"
        << "LogBuffersLost   " << q.totals.log_buffers_lost << "\n"
        << "RealTimeBuffersLost " << q.totals.realtime_buffers_lost << "\n"
        << "events written   " << q.totals.events_written << " of " << q.totals.events_attempted
        << " attempted\n";
}

// The session, then (a kernel with stacks) the stack settings and the cache counters beside the
// loss counters.
void print_status(Session& s, std::ostream& out) {
    const TraceSessionInformation q = query_trace_session(s);
    std::vector<uint32_t> per_cpu;
    if (s.has_region() && q.state != uint32_t(TraceState::kIdle)) {
        try {
            per_cpu = trace_buffers_allocated(s.paths().shm);
        } catch (const CollectError&) {  // the total from the guest's answer is printed anyway
        }
    }
    print_session(q, per_cpu, out);
    if (auto q = query_trace_stacks(s)) print_stacks(*q, out);
}

int start(Session& s, const Config& c, std::ostream& out, std::ostream& err, bool quiet = false) {
    const TraceSessionInformation p = start_params(c);
    if (const lt::SessionParamInfo* bad = lt::first_invalid_session_param(p)) {
        err << "spinlab-collect: trace start refused here: " << bad->name << " = "
            << field_at(p, bad->offset) << " is outside " << bad->minimum << ".." << bad->maximum
            << (*bad->rule ? std::string(" (") + bad->rule + ")" : std::string()) << "\n";
        return kExitUsage;
    }
    const TraceStackInformation sp = stack_params(c);
    if (const lt::SessionParamInfo* bad = lt::first_invalid_stack_param(sp)) {
        err << "spinlab-collect: trace start refused here: " << bad->name << " = "
            << stack_field_at(sp, bad->offset) << " is outside " << bad->minimum << ".." << bad->maximum
            << (*bad->rule ? std::string(" (") + bad->rule + ")" : std::string()) << "\n";
        return kExitUsage;
    }
    // Every start says its stack settings (none unless asked), so no earlier start's linger. A
    // kernel without stacks refuses the sub-class: that matters only when stacks were asked for.
    if (const Status st = set_trace_stacks(s, sp); st != Status::kSuccess &&
                                                   (stack_options_given(c.trace) || st != Status::kInvalidInfoClass)) {
        err << "spinlab-collect: trace start refused: the stack settings: " << status_name(uint32_t(st))
            << (st == Status::kInvalidParameter ? " (a session is running: trace stop first)" : "") << "\n";
        return kExitFailure;
    }
    if (const Status st = start_trace_session(s, p); st != Status::kSuccess) {
        err << "spinlab-collect: trace start refused: " << start_refusal(s, p, st) << "\n";
        return kExitFailure;
    }
    if (!quiet) print_status(s, out);
    return 0;
}

int stop(Session& s, std::ostream& out, std::ostream& err, bool quiet = false) {
    if (const Status st = stop_trace_session(s); st != Status::kSuccess) {
        err << "spinlab-collect: trace stop refused: " << status_name(uint32_t(st))
            << (st == Status::kInvalidParameter ? ": no session is running" : "") << "\n";
        return kExitFailure;
    }
    if (!quiet) print_status(s, out);
    return 0;
}

// `trace flush`: every CPU publishes its partly filled buffer (a trace record running beside
// takes them at once). --output: then the snapshot of a circular session, read in place.
int flush(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    if (!c.output.empty()) {
        if (!s.has_region())
            throw CollectError(kExitUsage, "trace flush --output needs the shared region: --vm or --shm");
        const TraceSessionInformation q = query_trace_session(s);
        if (q.state == uint32_t(TraceState::kRunning) && q.logger_mode != uint32_t(TraceLoggerMode::kCircular))
            throw CollectError(kExitUsage, "trace flush --output writes a circular session's snapshot; session " +
                                               std::to_string(q.session_id) + " is " +
                                               trace_logger_mode_name(TraceLoggerMode(q.logger_mode)) +
                                               " (trace record drains it)");
    }
    if (const Status st = flush_trace_session(s); st != Status::kSuccess) {
        err << "spinlab-collect: trace flush refused: " << status_name(uint32_t(st))
            << (st == Status::kInvalidParameter ? ": no session is running" : "") << "\n";
        return kExitFailure;
    }
    if (c.output.empty()) {
        out << "trace: every CPU published its partly filled buffer\n";
        return 0;
    }
    const TraceSnapshot snap = write_trace_snapshot(s.paths().shm, c.output);
    (snap.write_error.empty() ? out : err)
        << "trace: snapshot of session " << snap.session_id << " (still running): " << snap.buffers
        << " buffers, " << snap.events << " events to " << c.output << "; "
        << trace_counters_line(snap.totals)
        << (snap.undelivered ? "; " + std::to_string(snap.undelivered) + " buffers not delivered" : "") << "\n";
    if (!snap.write_error.empty()) {
        err << "spinlab-collect: " << snap.write_error << "\n";
        return kExitFailure;
    }
    return 0;
}

// How a recording's drain loop ended.
struct RecordEnd {
    std::string reason = "stopped";
    bool gone = false;   // the guest went away
    std::string error;   // a CollectError that ended it (kExitCorrupt: the region broke its rules)
    int code = 0;        // that error's exit status
};

// Drains until --duration, a signal or the guest going away; prints a rate line each second.
// Throws CollectError(kExitCorrupt) when the region breaks its rules (drain, clock).
RecordEnd record_loop(Session& s, const Config& c, TraceRecorder& rec, std::ostream& err) {
    RecordEnd end;
    const auto t0 = std::chrono::steady_clock::now();
    auto last_line = t0;
    uint64_t last_events = 0, last_bytes = 0;
    Heartbeat heartbeat(std::chrono::milliseconds(uint64_t(c.stall_timeout_s * 1000)));
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - t0).count();
        if (stop_requested()) {
            end.reason = "interrupted";
            return end;
        }
        if (c.duration_s > 0 && elapsed >= c.duration_s) {
            end.reason = "duration reached";
            return end;
        }
        std::optional<uint64_t> count;
        if (auto ck = s.region().clock()) count = ck->count;
        if (auto why = heartbeat.observe(rec.region_unlinked(), count, now)) {
            end.gone = true;
            end.reason = "the guest went away: " + *why;
            return end;
        }
        if (rec.drain()) continue;
        if (now - last_line >= std::chrono::seconds(1)) {
            const double dt = std::chrono::duration<double>(now - last_line).count();
            err << "trace: " << std::fixed << std::setprecision(0)
                << double(rec.events() - last_events) / dt << " events/s, " << std::setprecision(2)
                << double(rec.bytes() - last_bytes) / dt / 1e6 << " MB/s, " << rec.buffers()
                << " buffers, lost " << rec.totals().events_lost << " events" << "\n";
            last_line = now;
            last_events = rec.events();
            last_bytes = rec.bytes();
        }
        if (c.poll_interval_s > 0)
            std::this_thread::sleep_for(std::chrono::duration<double>(c.poll_interval_s));
        else
            std::this_thread::sleep_for(rec.poll_interval());
    }
}

// The stop of a session record started, with the buffers drained meanwhile: in blocking mode a
// CPU may be waiting for a buffer with preemption off (a kernel lock's event at its release),
// and on a one-vCPU guest that CPU is the one the channel's thread needs to answer the stop.
// A region the drain finds corrupt ends the recording as in record_loop (end.error).
void stop_while_draining(Session& s, TraceRecorder& rec, std::ostream& out, std::ostream& err, RecordEnd& end) {
    std::atomic<bool> answered{false};
    std::optional<CollectError> drain_error;
    std::thread drainer([&] {
        try {
            while (!answered.load()) {
                const bool took = end.error.empty() && rec.drain();
                if (!took) std::this_thread::sleep_for(rec.poll_interval());
            }
        } catch (const CollectError& e) {
            drain_error = e;
        }
    });
    try {
        stop(s, out, err, true);
    } catch (...) {
        answered = true;
        drainer.join();
        throw;
    }
    answered = true;
    drainer.join();
    if (drain_error) {
        if (drain_error->exit_code() != kExitCorrupt && drain_error->exit_code() != kExitFailure) throw *drain_error;
        end.error = drain_error->what();
        end.code = drain_error->exit_code();
    }
}

int record(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    if (!s.has_region()) throw CollectError(kExitUsage, "trace record needs the shared region: --vm or --shm");
    bool started = false;
    if (query_trace_session(s).state != uint32_t(TraceState::kRunning)) {
        if (int rc = start(s, c, out, err, true)) return rc;
        started = true;
    }
    std::optional<TraceRecorder> attached;
    try {
        attached.emplace(s.paths().shm, c.output, c.fsync);
    } catch (const CollectError&) {
        if (started) {  // leave no session running behind the error (which is what is reported)
            try {
                stop(s, out, err, true);
            } catch (const CollectError&) {
            }
        }
        throw;
    }
    TraceRecorder& rec = *attached;

    install_stop_handlers();
    RecordEnd end;
    try {
        end = record_loop(s, c, rec, err);
    } catch (const CollectError& e) {
        // A corrupt region (or a session the guest restarted under us): stop, keep the file.
        if (e.exit_code() != kExitCorrupt && e.exit_code() != kExitFailure) throw;
        end.error = e.what();
        end.code = e.exit_code();
    }
    if (started && !end.gone) {
        // The guest flushes every CPU's last buffer and writes the configuration event.
        try {
            stop_while_draining(s, rec, out, err, end);
        } catch (const CollectError& e) {
            err << "spinlab-collect: " << e.what() << "\n";
            end.gone = true;
        }
    }
    if (end.error.empty()) {
        // Whatever is published now (a dead guest's too: the mapping outlives the file).
        try {
            rec.finish();
        } catch (const CollectError& e) {
            if (e.exit_code() != kExitCorrupt && e.exit_code() != kExitFailure) throw;
            end.error = e.what();
            end.code = e.exit_code();
        }
    }
    if (!rec.write_error().empty() && end.error.empty()) {
        // A full disk: the recording went on, each buffer not written counted.
        end.error = rec.write_error() + "; " + std::to_string(rec.undelivered()) +
                    " buffers not in the file are counted in RealTimeBuffersLost";
        end.code = kExitFailure;
    }
    if (!end.error.empty()) {
        rec.abandon();  // the counters frame: the file ends as a finished one does
        err << "spinlab-collect: " << end.error << "\n";
        end.reason = "stopped by the error above";
    }
    const bool failed = end.gone || !end.error.empty();
    (failed ? err : out) << "trace: " << end.reason << "; " << rec.buffers() << " buffers, " << rec.events()
                         << " events to " << c.output << "; " << trace_counters_line(rec.totals())
                         << (rec.undelivered() ? "; " + std::to_string(rec.undelivered()) +
                                                     " buffers not delivered (" + std::to_string(rec.damaged()) +
                                                     " damaged)"
                                               : "")
                         << "\n";
    if (!end.error.empty()) return end.code;
    return end.gone ? kExitGuestGone : 0;
}

}  // namespace

int run_trace_dump(const Config& c, std::ostream& out, std::ostream& err) {
    std::ifstream in(c.trace.file, std::ios::binary);
    if (!in) throw CollectError(kExitFailure, "cannot read " + c.trace.file);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    TraceFileHeader h;
    const lt::FileError fe = lt::parse_file_header(data.data(), data.size(), &h);
    if (fe != lt::FileError::kNone)
        throw CollectError(kExitFailure, c.trace.file + ": " + trace_file_error_text(fe, data.data(), data.size()));
    out << "# trace session " << h.session.session_id << ", " << h.cpu_count << " CPUs, TSC "
        << h.tsc_hz << " Hz, mode " << trace_logger_mode_name(TraceLoggerMode(h.session.logger_mode))
        << ", groups " << trace_groups_text(h.session.enable_flags) << "\n";
    // --stacks: pass 1 learns every stack the trace defines, wherever it is.
    Symbolizer sym;
    std::optional<StackDump> stacks;
    if (c.trace.stacks) {
        if (!c.trace.kernel_elf.empty()) sym.load_kernel(c.trace.kernel_elf);
        if (!c.trace.initrd.empty()) sym.load_initrd(c.trace.initrd);
        stacks.emplace(sym);
        size_t o = sizeof h;
        lt::FrameView f;
        while (lt::next_frame(data.data(), data.size(), &o, &f) == lt::FileError::kNone) {
            lt::BufferView v;
            if (f.kind != TraceFrameKind::kBuffer || lt::parse_buffer(f.payload, f.length, &v) != lt::BufferError::kNone)
                continue;
            lt::for_each_event(v, [&](const TraceEventHeader& eh, const uint8_t* ev) { stacks->learn(eh, ev); });
        }
    }
    size_t off = sizeof h;
    lt::FrameView f;
    lt::FileError e;
    uint64_t events = 0, damaged = 0;
    while ((e = lt::next_frame(data.data(), data.size(), &off, &f)) == lt::FileError::kNone) {
        if (f.kind == TraceFrameKind::kCounters) {
            for (uint32_t i = 0; i + sizeof(TraceCpuCounters) <= f.length; i += sizeof(TraceCpuCounters)) {
                TraceCpuCounters k;
                std::memcpy(&k, f.payload + i, sizeof k);
                out << "# cpu " << k.cpu << " " << trace_counters_line(k.counters) << "\n";
            }
            continue;
        }
        lt::BufferView v;
        uint32_t where = 0;
        const lt::BufferError be = lt::parse_buffer(f.payload, f.length, &v, &where);
        if (be != lt::BufferError::kNone) {
            err << "spinlab-collect: " << c.trace.file << ": a buffer is damaged ("
                << lt::buffer_error_name(be) << " at byte " << where << "): skipped\n";
            damaged++;
            continue;
        }
        lt::for_each_event(v, [&](const TraceEventHeader& eh, const uint8_t* ev) {
            out << trace_event_line(eh, ev) << "\n";
            if (stacks) out << stacks->lines_after(eh, ev);
            events++;
        });
    }
    if (e != lt::FileError::kEnd) {
        err << "spinlab-collect: " << c.trace.file << ": " << lt::file_error_name(e)
            << " at byte " << off << "; every event before it was printed\n";
        return kExitFailure;
    }
    out << "# " << events << " events\n";
    if (stacks) {
        out << stacks->summary() << "\n";
        if (const std::string why = stacks->kernel_mismatch(); !why.empty()) {
            out << "# warning: " << why << "\n";
            err << "spinlab-collect: warning: " << why << "\n";
        }
    }
    return damaged ? kExitFailure : 0;
}

int run_trace(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    const std::string& a = c.trace.action;
    if (a == "start") return start(s, c, out, err);
    if (a == "stop") return stop(s, out, err);
    if (a == "status") {
        print_status(s, out);
        return 0;
    }
    if (a == "flush") return flush(s, c, out, err);
    if (a == "record") return record(s, c, out, err);
    throw CollectError(kExitUsage, "unknown trace action '" + a + "': start, stop, status, flush, record, dump");
}

}  // namespace spinlab::collect
