// collector/trace/trace_recorder.cc: see trace_recorder.h.
#include "trace_recorder.h"

#include <fcntl.h>
#include <spinlab/shm.h>
#include <unistd.h>

#include <cstring>

#include "channel/region_header.h"
#include "error.h"
#include "locktrace/drain.h"
#include "mapped_region.h"
#include "region_reader.h"
#include "locktrace/trace_session.h"
#include "locktrace/trace_file.h"

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
    TraceFileWriter(const TraceFileWriter&) = delete;
    TraceFileWriter& operator=(const TraceFileWriter&) = delete;
    void write_bytes(const void* data, size_t n) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w < 0 && errno == EINTR) continue;
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

}  // namespace

struct TraceRecorder::Impl {
    Impl(const std::string& path, const std::string& file, bool fsync_each)
        : region(path), out(file, fsync_each), region_path(path) {}
    TraceRegion region;
    TraceFileWriter out;
    std::string region_path;
    TraceAreaHeader h{};                // the copy area_parse checked: the only geometry used
    std::vector<lt::DrainCursor> cursors;  // one per CPU: what the host took and accepted
    std::vector<uint8_t> buf;
    uint64_t buffers = 0, events = 0, bytes = 0, damaged = 0;
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

    void write_buffer(const uint8_t* data, uint32_t len) {
        out.frame(TraceFrameKind::kBuffer, data, len);
        buffers++;
        bytes += len;
        events += reinterpret_cast<const TraceBufferHeader*>(data)->event_count;
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
    m.buf.resize(m.h.session.buffer_size);
    const TraceFileHeader fh = lt::make_file_header(m.h.session, m.h.session.cpu_count, m.region.tsc_hz());
    m.out.write_bytes(&fh, sizeof fh);
}

TraceRecorder::~TraceRecorder() = default;

bool TraceRecorder::drain() {
    Impl& m = *impl_;
    if (m.h.session.logger_mode == uint32_t(TraceLoggerMode::kCircular)) return false;
    bool any = false;
    for (uint32_t k = 0; k < m.h.session.cpu_count; k++) {
        uint32_t len;
        for (;;) {
            lt::DrainError e = lt::DrainError::kNone;
            const lt::TakeResult r =
                lt::take_buffer(m.region.area(), m.h, k, &m.cursors[k], m.buf.data(), &len, &e);
            if (r == lt::TakeResult::kCorrupt) m.fail(k, e);
            if (r == lt::TakeResult::kEmpty) break;
            any = true;
            if (r == lt::TakeResult::kBad) {
                m.damaged++;
                continue;
            }
            m.write_buffer(m.buf.data(), len);
        }
    }
    return any;
}

void TraceRecorder::finish() {
    Impl& m = *impl_;
    if (m.h.session.logger_mode == uint32_t(TraceLoggerMode::kCircular)) {
        for (uint32_t k = 0; k < m.h.session.cpu_count; k++) {
            lt::DrainError e = lt::DrainError::kNone;
            lt::read_in_place(m.region.area(), m.h, k, &m.cursors[k], m.buf.data(),
                              [](void* arg, const uint8_t* data, uint32_t len) {
                                  static_cast<Impl*>(arg)->write_buffer(data, len);
                              },
                              &m, &e);
            if (e != lt::DrainError::kNone) m.fail(k, e);
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
    m.out.frame(TraceFrameKind::kCounters, v.data(), uint32_t(v.size() * sizeof v[0]));
}

const TraceSessionInformation& TraceRecorder::session() const { return impl_->h.session; }
uint32_t TraceRecorder::cpu_count() const { return impl_->h.session.cpu_count; }
uint64_t TraceRecorder::buffers() const { return impl_->buffers; }
uint64_t TraceRecorder::events() const { return impl_->events; }
uint64_t TraceRecorder::bytes() const { return impl_->bytes; }
uint64_t TraceRecorder::damaged() const { return impl_->damaged; }
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

}  // namespace spinlab::collect
