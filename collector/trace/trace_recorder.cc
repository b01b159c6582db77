// collector/trace/trace_recorder.cc: see trace_recorder.h.
#include "trace_recorder.h"

#include <fcntl.h>
#include <spinlab/shm.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

#include "channel/region_header.h"
#include "hostlib/error.h"
#include "hostlib/mapped_region.h"
#include "locktrace/drain.h"
#include "locktrace/trace_file.h"
#include "locktrace/trace_session.h"
#include "region_reader.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;

// The shared region mapped read-write (the drain gives buffers back), and its trace section.
class TraceRegion {
public:
    // The header is judged as RegionReader judges it (attach_layout: another ABI version is
    // exit 4, both versions named); a throw leaves nothing open or mapped (MappedRegion).
    explicit TraceRegion(const std::string& path) : map_(path, MappedRegion::Access::kReadWrite) {
        const RegionLayout layout = attach_layout(map_, std::chrono::milliseconds(1000));
        const RegionSectionEntry& t = layout.section(RegionSection::kTrace);
        area_ = map_.data() + t.offset;
        area_size_ = t.size;
        tsc_hz_ = layout.tsc_hz;
    }

    void* area() const { return area_; }
    uint64_t area_size() const { return area_size_; }
    uint64_t tsc_hz() const { return tsc_hz_; }
    bool unlinked() const { return map_.unlinked(); }

private:
    MappedRegion map_;
    uint8_t* area_ = nullptr;
    uint64_t area_size_ = 0;
    uint64_t tsc_hz_ = 0;
};

// The trace file, each frame written with one write(2). A frame that cannot be written (a full
// disk) is cut off again, so the file always ends on a whole frame; frame() then says false and
// the caller counts the buffer as not delivered. error() keeps the first failure's reason.
class TraceFileWriter {
public:
    TraceFileWriter(const std::string& path, bool fsync_each) : path_(path), fsync_(fsync_each) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) throw CollectError(kExitFailure, "cannot create " + path + ": " + std::strerror(errno));
    }
    ~TraceFileWriter() {
        if (fd_ >= 0) ::close(fd_);
    }
    TraceFileWriter(const TraceFileWriter&) = delete;
    TraceFileWriter& operator=(const TraceFileWriter&) = delete;
    // The file header: a recording that cannot write it has nothing to write (throws).
    void header(const void* data, size_t n) {
        if (!write_whole(data, n)) throw CollectError(kExitFailure, error_);
    }
    bool frame(TraceFrameKind kind, const void* payload, uint32_t len) {
        scratch_.resize(sizeof(TraceFrameHeader) + len);
        std::memcpy(scratch_.data() + sizeof(TraceFrameHeader), payload, len);
        return frame_in_place(kind, scratch_.data(), len);
    }
    // The same frame from `frame`, which holds sizeof(TraceFrameHeader) bytes of room and then
    // the `len` payload bytes: the header is written into the room, and the whole frame goes
    // out with one write(2), with no copy (a buffer's path: take_buffer copies it there).
    bool frame_in_place(TraceFrameKind kind, uint8_t* frame, uint32_t len) {
        const TraceFrameHeader h = lt::make_frame_header(kind, frame + sizeof h, len);
        std::memcpy(frame, &h, sizeof h);
        return write_whole(frame, sizeof h + len);
    }
    const std::string& error() const { return error_; }

private:
    // All n bytes at the end of the file, or none of them (false).
    bool write_whole(const void* data, size_t n) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        size_t left = n;
        while (left > 0) {
            const ssize_t w = ::write(fd_, p, left);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                if (error_.empty())
                    error_ = "cannot write " + path_ + ": " + std::strerror(w < 0 ? errno : ENOSPC);
                // Cut the partial frame off (the offset stays where the file now ends).
                if (::ftruncate(fd_, off_t(good_)) == 0) ::lseek(fd_, off_t(good_), SEEK_SET);
                return false;
            }
            p += w;
            left -= size_t(w);
        }
        good_ += n;
        if (fsync_) ::fdatasync(fd_);
        return true;
    }

    std::string path_;
    int fd_ = -1;
    bool fsync_;
    uint64_t good_ = 0;  // bytes of whole frames (and the header) in the file
    std::string error_;
    std::vector<uint8_t> scratch_;
};

}  // namespace

struct TraceRecorder::Impl {
    Impl(const std::string& path, const std::string& file, bool fsync_each)
        : region(path), out(file, fsync_each), region_path(path) {}
    TraceRegion region;
    TraceFileWriter out;
    std::string region_path;
    TraceAreaHeader h{};                // the copy area_parse checked: the only geometry used
    std::vector<lt::DrainCursor> cursors;  // one per CPU: what the host took and accepted
    // A frame: room for its header, then the buffer taken (payload()), so that the frame is
    // written from here with no second copy.
    std::vector<uint8_t> buf;
    uint8_t* payload() { return buf.data() + sizeof(TraceFrameHeader); }
    // The poll interval's estimate: bytes taken in the window that began at window_start, and
    // the fastest recent rate (bytes/s; halved by every quieter window).
    std::chrono::steady_clock::time_point window_start = std::chrono::steady_clock::now();
    uint64_t window_bytes = 0;
    double rate = 0;
    uint64_t buffers = 0, events = 0, bytes = 0, damaged = 0;
    uint64_t undelivered = 0;  // taken or read, not in the file: this recorder's RealTimeBuffersLost
    bool counters_written = false;

    // A protocol break on `cpu`: the error every caller sees. When the area's header now names
    // another session, the guest restarted it under us; that is said, not called corrupt.
    [[noreturn]] void fail(uint32_t cpu, lt::DrainError e) {
        const std::string what = "cpu " + std::to_string(cpu) + ": " + lt::drain_error_name(e);
        TraceAreaHeader now;
        if (lt::area_parse(region.area(), region.area_size(), &now) == nullptr &&
            now.session.session_id != h.session.session_id)
            throw CollectError(kExitFailure, "the guest started trace session " +
                                                 std::to_string(now.session.session_id) +
                                                 " while session " +
                                                 std::to_string(h.session.session_id) +
                                                 " was recorded (" + what + ")");
        throw CollectError(kExitCorrupt, corrupt_region_message(region_path, what));
    }

    // A buffer of CPU `cpu` the host took (or read in place): into the file, or counted in that
    // CPU's RealTimeBuffersLost when the write fails.
    void write_buffer(uint32_t cpu, const uint8_t* data, uint32_t len) {
        // Both callers (take_buffer, read_in_place) copied the buffer to payload().
        const bool written = data == payload()
                                 ? out.frame_in_place(TraceFrameKind::kBuffer, buf.data(), len)
                                 : out.frame(TraceFrameKind::kBuffer, data, len);
        if (!written) {
            lost(cpu, 1);
            return;
        }
        buffers++;
        bytes += len;
        events += reinterpret_cast<const TraceBufferHeader*>(data)->event_count;
    }

    void lost(uint32_t cpu, uint64_t n) {
        lt::count_realtime_lost(region.area(), h, cpu, n);
        undelivered += n;
    }
};

TraceRecorder::TraceRecorder(const std::string& region_path, const std::string& file,
                             bool fsync_each)
    : impl_(std::make_unique<Impl>(region_path, file, fsync_each)) {
    Impl& m = *impl_;
    const char* why = "busy";
    for (int i = 0; i < 100 && why && std::strcmp(why, "busy") == 0; i++)
        why = lt::area_parse(m.region.area(), m.region.area_size(), &m.h);
    if (why && std::strcmp(why, "busy") == 0)
        throw CollectError(kExitFailure, "trace area: a session start or stop did not finish");
    if (why && std::strcmp(why, "no trace session since the guest booted") == 0)
        throw CollectError(kExitFailure, std::string("trace area: ") + why);
    if (why) throw CollectError(kExitCorrupt, corrupt_region_message(region_path, std::string("trace area: ") + why));
    m.cursors.resize(m.h.session.cpu_count);
    for (uint32_t k = 0; k < m.h.session.cpu_count; k++)
        if (const lt::DrainError e = lt::cursor_init(m.region.area(), m.h, k, &m.cursors[k]);
            e != lt::DrainError::kNone)
            m.fail(k, e);
    m.buf.resize(sizeof(TraceFrameHeader) + m.h.session.buffer_size);
    const TraceFileHeader fh = lt::make_file_header(m.h.session, m.h.session.cpu_count, m.region.tsc_hz());
    m.out.header(&fh, sizeof fh);
}

TraceRecorder::~TraceRecorder() = default;

bool TraceRecorder::drain() {
    Impl& m = *impl_;
    if (m.h.session.logger_mode == uint32_t(TraceLoggerMode::kCircular)) return false;
    bool any = false;
    uint64_t taken_bytes = 0;
    // At most one round of a CPU's slots per call: against a producer as fast as the host, the
    // caller (trace record) still gets to check its duration and Ctrl-C between calls.
    const uint32_t per_call = std::max<uint32_t>(1, m.h.session.buffers_per_cpu);
    for (uint32_t k = 0; k < m.h.session.cpu_count; k++) {
        uint32_t len;
        for (uint32_t taken = 0; taken < per_call; taken++) {
            lt::DrainError e = lt::DrainError::kNone;
            const lt::TakeResult r =
                lt::take_buffer(m.region.area(), m.h, k, &m.cursors[k], m.payload(), &len, &e);
            if (r == lt::TakeResult::kCorrupt) m.fail(k, e);
            if (r == lt::TakeResult::kEmpty) break;
            any = true;
            if (r == lt::TakeResult::kBad) {  // counted in RealTimeBuffersLost by take_buffer
                m.damaged++;
                m.undelivered++;
                continue;
            }
            m.write_buffer(k, m.payload(), len);
            taken_bytes += m.h.session.buffer_size;
        }
    }
    // The rate for poll_interval(), over windows of at least 2 ms.
    const auto now = std::chrono::steady_clock::now();
    m.window_bytes += taken_bytes;
    const double dt = std::chrono::duration<double>(now - m.window_start).count();
    if (dt >= 0.002) {
        m.rate = std::max(double(m.window_bytes) / dt, m.rate / 2);
        m.window_start = now;
        m.window_bytes = 0;
    }
    return any;
}

std::chrono::microseconds TraceRecorder::poll_interval() const {
    const Impl& m = *impl_;
    constexpr std::chrono::microseconds kLongest{2000}, kShortest{50};
    if (m.rate <= 0) return kLongest;
    // A quarter of the time one CPU's buffers take to fill at the whole session's recent rate.
    const double fill_s = double(m.h.session.buffers_per_cpu) * m.h.session.buffer_size / m.rate;
    const double us = std::clamp(fill_s / 4 * 1e6, double(kShortest.count()), double(kLongest.count()));
    return std::chrono::microseconds(int64_t(us));
}

void TraceRecorder::finish() {
    Impl& m = *impl_;
    if (m.h.session.logger_mode == uint32_t(TraceLoggerMode::kCircular)) {
        for (uint32_t k = 0; k < m.h.session.cpu_count; k++) {
            lt::DrainError e = lt::DrainError::kNone;
            struct Emit {
                Impl* m;
                uint32_t cpu;
            } to{&m, k};
            // Buffers overwritten while they were copied (torn) are not delivered: counted.
            const uint64_t torn = lt::read_in_place(
                m.region.area(), m.h, k, &m.cursors[k], m.payload(),
                [](void* arg, const uint8_t* data, uint32_t len) {
                    const Emit& to = *static_cast<const Emit*>(arg);
                    to.m->write_buffer(to.cpu, data, len);
                },
                &to, &e);
            if (e != lt::DrainError::kNone) m.fail(k, e);
            m.lost(k, torn);
        }
    } else {
        while (drain()) {}
    }
    abandon();
}

void TraceRecorder::abandon() {
    Impl& m = *impl_;
    if (m.counters_written) return;
    m.counters_written = true;
    const std::vector<TraceCpuCounters> v = counters();
    m.out.frame(TraceFrameKind::kCounters, v.data(), uint32_t(v.size() * sizeof v[0]));  // else in write_error()
}

const TraceSessionInformation& TraceRecorder::session() const { return impl_->h.session; }
uint32_t TraceRecorder::cpu_count() const { return impl_->h.session.cpu_count; }
uint64_t TraceRecorder::buffers() const { return impl_->buffers; }
uint64_t TraceRecorder::events() const { return impl_->events; }
uint64_t TraceRecorder::bytes() const { return impl_->bytes; }
uint64_t TraceRecorder::damaged() const { return impl_->damaged; }
uint64_t TraceRecorder::undelivered() const { return impl_->undelivered; }
const std::string& TraceRecorder::write_error() const { return impl_->out.error(); }
bool TraceRecorder::region_unlinked() const { return impl_->region.unlinked(); }

std::vector<TraceCpuCounters> TraceRecorder::counters() const {
    std::vector<TraceCpuCounters> v(cpu_count());
    for (uint32_t k = 0; k < v.size(); k++) {
        v[k].cpu = k;
        v[k].reserved = 0;
        v[k].counters = lt::cpu_loss_counters(impl_->region.area(), impl_->h, k);
    }
    return v;
}

TraceLossCounters TraceRecorder::totals() const {
    return lt::area_totals(impl_->region.area(), impl_->h);
}

std::vector<uint32_t> TraceRecorder::buffers_allocated() const {
    std::vector<uint32_t> v(cpu_count());
    for (uint32_t k = 0; k < v.size(); k++) v[k] = lt::cpu_buffers_allocated(impl_->region.area(), impl_->h, k);
    return v;
}

std::vector<uint32_t> trace_buffers_allocated(const std::string& region_path) {
    const MappedRegion map(region_path, MappedRegion::Access::kRead);
    RegionLayout layout;
    if (region_parse(map.data(), map.size(), &layout) != RegionError::kNone) return {};
    const RegionSectionEntry& t = layout.section(RegionSection::kTrace);
    TraceAreaHeader h;
    if (lt::area_parse(map.data() + t.offset, t.size, &h) != nullptr) return {};
    std::vector<uint32_t> v(h.session.cpu_count);
    for (uint32_t k = 0; k < v.size(); k++) v[k] = lt::cpu_buffers_allocated(map.data() + t.offset, h, k);
    return v;
}

TraceSnapshot write_trace_snapshot(const std::string& region_path, const std::string& file) {
    TraceRecorder rec(region_path, file);
    if (rec.session().logger_mode != uint32_t(TraceLoggerMode::kCircular))
        throw CollectError(kExitUsage, std::string("a snapshot reads a circular session in place; this one is ") +
                                           trace_logger_mode_name(TraceLoggerMode(rec.session().logger_mode)) +
                                           " (trace record drains it)");
    rec.finish();
    return {rec.session().session_id, rec.buffers(), rec.events(), rec.undelivered(), rec.write_error(),
            rec.totals()};
}

}  // namespace spinlab::collect
