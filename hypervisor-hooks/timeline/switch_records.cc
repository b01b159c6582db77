#include "switch_records.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>  // CLOCK_MONOTONIC_RAW
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
// Ring buffer of each thread: 2^7 pages of 4 KiB = 16,384 switch records of 32 bytes, 64,000
// switches a second at timeline's 250 ms drain period (a busy vCPU thread here: 1,000-3,000).
constexpr size_t kDataPages = 128;
// sample_id of every record with sample_type TID|TIME|CPU: pid, tid, time, cpu, reserved.
constexpr size_t kSampleIdSize = 4 + 4 + 8 + 4 + 4;

template <typename T>
T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

void close_ring(void* map, size_t size, int fd) {
    if (map && map != MAP_FAILED) ::munmap(map, size);
    if (fd >= 0) ::close(fd);
}
}  // namespace

size_t decode_switch_records(const unsigned char* data, size_t size, std::vector<SwitchRecord>& out,
                             uint64_t& lost) {
    size_t at = 0;
    while (size - at >= sizeof(perf_event_header)) {
        const auto header = load<perf_event_header>(data + at);
        if (header.size < sizeof(perf_event_header) || header.size % 8 != 0) {
            throw LoadError("perf switch records: a record of impossible size " + std::to_string(header.size) +
                            " (type " + std::to_string(header.type) + ") at byte " + std::to_string(at));
        }
        if (header.size > size - at) break;  // cut: the rest comes with the next read
        const unsigned char* body = data + at + sizeof(perf_event_header);
        const size_t body_size = header.size - sizeof(perf_event_header);
        if (header.type == PERF_RECORD_SWITCH) {
            if (body_size < kSampleIdSize)
                throw LoadError("perf switch records: a switch record of " + std::to_string(header.size) +
                                " bytes has no sample_id (expected TID|TIME|CPU)");
            const unsigned char* id = body + body_size - kSampleIdSize;
            SwitchRecord r;
            r.tid = static_cast<int>(load<uint32_t>(id + 4));
            r.ts = load<uint64_t>(id + 8);
            r.cpu = static_cast<int>(load<uint32_t>(id + 16));
            r.in = (header.misc & PERF_RECORD_MISC_SWITCH_OUT) == 0;
            r.preempt = !r.in && (header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
            out.push_back(r);
        } else if (header.type == PERF_RECORD_LOST && body_size >= 16) {
            lost += load<uint64_t>(body + 8);  // after the event id
        }
        at += header.size;
    }
    return at;
}

SwitchRecorder::SwitchRecorder(const std::vector<int>& tids) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t map_size = (1 + kDataPages) * page;
    for (int tid : tids) {
        perf_event_attr attr{};
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_DUMMY;
        attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
        attr.sample_id_all = 1;
        attr.context_switch = 1;
        attr.use_clockid = 1;
        attr.clockid = CLOCK_MONOTONIC_RAW;
        attr.disabled = 1;
        attr.exclude_kernel = 1;  // counts nothing anyway; lets perf_event_paranoid 2 allow it
        attr.exclude_hv = 1;
        const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
        if (fd < 0) {
            const int err = errno;
            release();
            throw LoadError("perf_event_open for the switches of thread " + std::to_string(tid) + ": " +
                            std::strerror(err));
        }
        void* map = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            const int err = errno;
            close_ring(nullptr, 0, fd);
            release();
            throw LoadError("mmap of the perf ring buffer of thread " + std::to_string(tid) + ": " +
                            std::strerror(err));
        }
        rings_.push_back({tid, fd, map, map_size});
    }
}

SwitchRecorder::~SwitchRecorder() { release(); }

void SwitchRecorder::release() {
    for (Ring& r : rings_) close_ring(r.map, r.map_size, r.fd);
    rings_.clear();
}

void SwitchRecorder::enable() {
    for (Ring& r : rings_) ::ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0);
}

void SwitchRecorder::disable() {
    for (Ring& r : rings_) ::ioctl(r.fd, PERF_EVENT_IOC_DISABLE, 0);
}

void SwitchRecorder::drain() {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> bytes;
    for (Ring& r : rings_) {
        auto* meta = static_cast<perf_event_mmap_page*>(r.map);
        const unsigned char* data = static_cast<unsigned char*>(r.map) + page;
        const uint64_t data_size = r.map_size - page;
        const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        const uint64_t tail = meta->data_tail;
        bytes.resize(head - tail);
        for (uint64_t i = tail; i < head; ++i) bytes[i - tail] = data[i % data_size];
        const size_t used = decode_switch_records(bytes.data(), bytes.size(), records_, lost_);
        __atomic_store_n(&meta->data_tail, tail + used, __ATOMIC_RELEASE);
    }
}

}  // namespace spinlab::load
