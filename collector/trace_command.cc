// collector/trace_command.cc: `trace start|stop|status|record|dump` (spinlab/trace.h).
//
// start/stop/status go through the control channel (class 0x1F, sub-class kSpinlabTraceSession:
// the guest's one sysinfo handler decides). record drains the trace area of the shared region
// (mapped read-write: the drainer gives buffers back) into a trace file, one frame per buffer,
// each frame on disk with one write(2) as soon as its buffer is taken, so a guest that dies
// leaves every whole buffer it published in the file. dump prints a trace file as text.
#include <fcntl.h>
#include <spinlab/shm.h>
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <thread>
#include <vector>

#include "channel/region_header.h"
#include "commands.h"
#include "error.h"
#include "heartbeat.h"
#include "locktrace/buffer_parser.h"
#include "locktrace/drain.h"
#include "locktrace/session.h"
#include "locktrace/trace_file.h"
#include "trace_text.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;
constexpr uint32_t kInfo = uint32_t(InfoClass::kSystemPerformanceTraceInformation);

template <class T>
std::span<const uint8_t> bytes_of(const T& v) {
    return {reinterpret_cast<const uint8_t*>(&v), sizeof v};
}

TraceSessionInformation query_session(Session& s) {
    TraceSessionInformation q{};
    q.event_trace_information_class = kSpinlabTraceSession;
    CallResult r = s.channel().query(kInfo, kSpinlabTraceSession, bytes_of(q), sizeof q);
    if (r.status != uint32_t(Status::kSuccess) || r.data.size() != sizeof q)
        throw CollectError(kExitFailure, std::string("cannot query the trace session: ") +
                                             status_name(r.status) +
                                             (r.status == uint32_t(Status::kInvalidInfoClass)
                                                  ? " (a kernel built with INSTRUMENT=0 has none)"
                                                  : ""));
    std::memcpy(&q, r.data.data(), sizeof q);
    return q;
}

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

void print_session(const TraceSessionInformation& q, std::ostream& out) {
    out << "state            " << trace_state_name(TraceState(q.state)) << "\n"
        << "session          " << q.session_id << "\n"
        << "BufferSize       " << q.buffer_size << "\n"
        << "MinimumBuffers   " << q.minimum_buffers << "\n"
        << "MaximumBuffers   " << q.maximum_buffers << " (per CPU in use: " << q.buffers_per_cpu
        << ")\n"
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

int start(Session& s, const Config& c, std::ostream& out, std::ostream& err, bool quiet = false) {
    const TraceSessionInformation p = start_params(c);
    if (const lt::SessionParamInfo* bad = lt::first_invalid_session_param(p)) {
        err << "spinlab-collect: trace start refused here: " << bad->name << " = "
            << field_at(p, bad->offset) << " is outside " << bad->minimum << ".." << bad->maximum
            << (*bad->rule ? std::string(" (") + bad->rule + ")" : std::string()) << "\n";
        return kExitUsage;
    }
    CallResult r = s.channel().set(kInfo, kSpinlabTraceSession, bytes_of(p));
    if (r.status != uint32_t(Status::kSuccess)) {
        err << "spinlab-collect: trace start refused: " << status_name(r.status);
        const TraceSessionInformation q = query_session(s);
        if (q.state == uint32_t(TraceState::kRunning))
            err << ": session " << q.session_id << " is already running (trace stop first)";
        else if (r.status == uint32_t(Status::kInvalidParameter))
            err << ": fewer than MinimumBuffers = " << p.minimum_buffers << " buffers of BufferSize = "
                << p.buffer_size << " fit per CPU in the guest's trace area";
        else if (r.status == uint32_t(Status::kAccessDenied))
            err << ": the channel's caller is not privileged";
        err << "\n";
        return kExitFailure;
    }
    if (!quiet) print_session(query_session(s), out);
    return 0;
}

int stop(Session& s, std::ostream& out, std::ostream& err, bool quiet = false) {
    TraceSessionInformation p{};
    p.event_trace_information_class = kSpinlabTraceSession;
    p.command = uint32_t(TraceCommand::kStop);
    CallResult r = s.channel().set(kInfo, kSpinlabTraceSession, bytes_of(p));
    if (r.status != uint32_t(Status::kSuccess)) {
        err << "spinlab-collect: trace stop refused: " << status_name(r.status)
            << (r.status == uint32_t(Status::kInvalidParameter) ? ": no session is running" : "")
            << "\n";
        return kExitFailure;
    }
    if (!quiet) print_session(query_session(s), out);
    return 0;
}

// The shared region mapped read-write, and its trace section.
class TraceRegion {
public:
    explicit TraceRegion(const std::string& path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd_ < 0) throw CollectError(kExitNoVm, "cannot open the shared region " + path);
        struct stat st;
        if (::fstat(fd_, &st) != 0 || st.st_size <= 0)
            throw CollectError(kExitNoVm, "shared region " + path + " is empty");
        size_ = size_t(st.st_size);
        void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) throw CollectError(kExitFailure, "cannot map " + path + " read-write");
        base_ = static_cast<uint8_t*>(p);
        RegionLayout layout;
        const RegionError e = region_parse(base_, size_, &layout);
        if (e != RegionError::kNone)
            throw CollectError(kExitFailure, std::string("shared region ") + path + ": " +
                                                 region_error_name(e));
        const RegionSectionEntry& t = layout.section(RegionSection::kTrace);
        area_ = base_ + t.offset;
        area_size_ = t.size;
        tsc_hz_ = layout.tsc_hz;
        cpu_count_ = layout.cpu_count;
    }
    ~TraceRegion() {
        if (base_) ::munmap(base_, size_);
        if (fd_ >= 0) ::close(fd_);
    }
    TraceRegion(const TraceRegion&) = delete;
    TraceRegion& operator=(const TraceRegion&) = delete;

    void* area() const { return area_; }
    uint64_t area_size() const { return area_size_; }
    uint64_t tsc_hz() const { return tsc_hz_; }
    bool unlinked() const {
        struct stat st;
        return ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
    }

private:
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    size_t size_ = 0;
    uint8_t* area_ = nullptr;
    uint64_t area_size_ = 0;
    uint64_t tsc_hz_ = 0;
    uint32_t cpu_count_ = 0;
};

// The trace file, each frame written with one write(2).
class TraceFileWriter {
public:
    TraceFileWriter(const std::string& path, bool fsync_each) : path_(path), fsync_(fsync_each) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) throw CollectError(kExitFailure, "cannot create " + path);
    }
    ~TraceFileWriter() {
        if (fd_ >= 0) ::close(fd_);
    }
    void write_bytes(const void* data, size_t n) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w < 0) throw CollectError(kExitFailure, "cannot write " + path_);
            p += w;
            n -= size_t(w);
        }
        if (fsync_) ::fdatasync(fd_);
    }
    void frame(TraceFrameKind kind, const void* payload, uint32_t len) {
        scratch_.resize(sizeof(TraceFrameHeader) + len);
        const TraceFrameHeader h = lt::make_frame_header(kind, payload, len);
        std::memcpy(scratch_.data(), &h, sizeof h);
        std::memcpy(scratch_.data() + sizeof h, payload, len);
        write_bytes(scratch_.data(), scratch_.size());
    }

private:
    std::string path_;
    int fd_ = -1;
    bool fsync_;
    std::vector<uint8_t> scratch_;
};

void write_counters(TraceFileWriter& f, void* area, uint32_t cpus) {
    std::vector<TraceCpuCounters> v(cpus);
    for (uint32_t k = 0; k < cpus; k++) {
        const TraceCpuControl* c = lt::area_control(area, k);
        v[k].cpu = k;
        v[k].reserved = 0;
        v[k].counters = {c->events_attempted, c->events_written, c->events_lost,
                         c->buffers_written, c->log_buffers_lost, c->realtime_buffers_lost};
    }
    f.frame(TraceFrameKind::kCounters, v.data(), uint32_t(v.size() * sizeof v[0]));
}

int record(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    if (!s.has_region()) throw CollectError(kExitUsage, "trace record needs the shared region: --vm or --shm");
    TraceRegion region(s.paths().shm);
    bool started = false;
    if (query_session(s).state != uint32_t(TraceState::kRunning)) {
        if (int rc = start(s, c, out, err, true)) return rc;
        started = true;
    }
    TraceAreaHeader h;
    const char* why = "busy";
    for (int i = 0; i < 100 && why && std::strcmp(why, "busy") == 0; i++)
        why = lt::area_parse(region.area(), region.area_size(), &h);
    if (why) throw CollectError(kExitFailure, std::string("trace area: ") + why);
    const uint32_t cpus = h.session.cpu_count;
    const bool circular = h.session.logger_mode == uint32_t(TraceLoggerMode::kCircular);

    TraceFileWriter file(c.output, c.fsync);
    const TraceFileHeader fh = lt::make_file_header(h.session, cpus, region.tsc_hz());
    file.write_bytes(&fh, sizeof fh);

    install_stop_handlers();
    std::vector<uint8_t> buf(h.session.buffer_size);
    uint64_t buffers = 0, events = 0, bytes = 0, bad = 0;
    auto drain = [&] {
        bool any = false;
        for (uint32_t k = 0; k < cpus; k++) {
            uint32_t len;
            for (;;) {
                const lt::TakeResult r = lt::take_buffer(region.area(), h, k, buf.data(), &len);
                if (r == lt::TakeResult::kEmpty) break;
                any = true;
                if (r == lt::TakeResult::kBad) {
                    bad++;
                    continue;
                }
                file.frame(TraceFrameKind::kBuffer, buf.data(), len);
                buffers++;
                bytes += len;
                events += reinterpret_cast<const TraceBufferHeader*>(buf.data())->event_count;
            }
        }
        return any;
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto last_line = t0;
    uint64_t last_events = 0, last_bytes = 0;
    bool gone = false;
    std::string reason = "stopped";
    Heartbeat heartbeat(std::chrono::milliseconds(uint64_t(c.stall_timeout_s * 1000)));
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - t0).count();
        if (stop_requested()) {
            reason = "interrupted";
            break;
        }
        if (c.duration_s > 0 && elapsed >= c.duration_s) {
            reason = "duration reached";
            break;
        }
        std::optional<uint64_t> count;
        if (auto ck = s.region().clock()) count = ck->count;
        if (auto why = heartbeat.observe(region.unlinked(), count, now)) {
            gone = true;
            reason = "the guest went away: " + *why;
            break;
        }
        if (!circular && drain()) continue;
        if (now - last_line >= std::chrono::seconds(1)) {
            const double dt = std::chrono::duration<double>(now - last_line).count();
            const TraceLossCounters t = lt::area_totals(region.area());
            err << "trace: " << std::fixed << std::setprecision(0)
                << double(events - last_events) / dt << " events/s, " << std::setprecision(2)
                << double(bytes - last_bytes) / dt / 1e6 << " MB/s, " << buffers << " buffers, lost "
                << t.events_lost << " events" << "\n";
            last_line = now;
            last_events = events;
            last_bytes = bytes;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (started && !gone) {
        // The guest flushes every CPU's last buffer and writes the configuration event.
        try {
            stop(s, out, err, true);
        } catch (const CollectError& e) {
            err << "spinlab-collect: " << e.what() << "\n";
            gone = true;
        }
    }
    // Whatever is published now (a dead guest's too: the mapping outlives the file).
    if (circular) {
        struct Ctx {
            TraceFileWriter* f;
            uint64_t* buffers;
            uint64_t* events;
        } ctx{&file, &buffers, &events};
        for (uint32_t k = 0; k < cpus; k++)
            lt::read_in_place(region.area(), h, k, buf.data(),
                              [](void* arg, const uint8_t* data, uint32_t len) {
                                  auto* x = static_cast<Ctx*>(arg);
                                  x->f->frame(TraceFrameKind::kBuffer, data, len);
                                  (*x->buffers)++;
                                  *x->events += reinterpret_cast<const TraceBufferHeader*>(data)->event_count;
                              },
                              &ctx);
    } else {
        while (drain()) {}
    }
    write_counters(file, region.area(), cpus);
    const TraceLossCounters t = lt::area_totals(region.area());
    (gone ? err : out) << "trace: " << reason << "; " << buffers << " buffers, " << events
                       << " events to " << c.output << "; " << trace_counters_line(t)
                       << (bad ? "; " + std::to_string(bad) + " damaged buffers skipped" : "")
                       << "\n";
    return gone ? kExitGuestGone : 0;
}

}  // namespace

int run_trace_dump(const Config& c, std::ostream& out, std::ostream& err) {
    std::ifstream in(c.trace.file, std::ios::binary);
    if (!in) throw CollectError(kExitFailure, "cannot read " + c.trace.file);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    TraceFileHeader h;
    const lt::FileError fe = lt::parse_file_header(data.data(), data.size(), &h);
    if (fe != lt::FileError::kNone)
        throw CollectError(kExitFailure, c.trace.file + ": " + lt::file_error_name(fe));
    out << "# trace session " << h.session.session_id << ", " << h.cpu_count << " CPUs, TSC "
        << h.tsc_hz << " Hz, mode " << trace_logger_mode_name(TraceLoggerMode(h.session.logger_mode))
        << ", groups " << trace_groups_text(h.session.enable_flags) << "\n";
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
            events++;
        });
    }
    if (e != lt::FileError::kEnd) {
        err << "spinlab-collect: " << c.trace.file << ": " << lt::file_error_name(e)
            << " at byte " << off << "; every event before it was printed\n";
        return kExitFailure;
    }
    out << "# " << events << " events\n";
    return damaged ? kExitFailure : 0;
}

int run_trace(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    const std::string& a = c.trace.action;
    if (a == "start") return start(s, c, out, err);
    if (a == "stop") return stop(s, out, err);
    if (a == "status") {
        print_session(query_session(s), out);
        return 0;
    }
    if (a == "record") return record(s, c, out, err);
    throw CollectError(kExitUsage, "unknown trace action '" + a + "': start, stop, status, record, dump");
}

}  // namespace spinlab::collect
