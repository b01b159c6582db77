// collector/testing/mem_region.h: a shared region in memory (a memfd), laid out by the guest's
// own code (region_layout, area_start, the trace writer), for the tests and the fuzzer that play
// a hostile guest against the host's readers. The host tools open it by path(), as they open
// /dev/shm/spinlab-NAME; the test writes into base() as the guest would, whenever it likes.
// Header-only: the fuzzer (built by scripts/fuzz.sh with clang) and the GoogleTest binary share it.
#pragma once
#include <spinlab/shm.h>
#include <spinlab/trace.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "locktrace/trace_session.h"
#include "locktrace/writer.h"

namespace spinlab::testing {

class MemRegion {
public:
    // cpus CPUs, a trace session of `buffers` buffers of 4 KiB per CPU in `mode` (running),
    // a clock publication (count 1, period 10 ms) and every CPU's perf data initialised.
    MemRegion(uint32_t cpus, uint32_t buffers, TraceLoggerMode mode) : cpus_(cpus) {
        const uint64_t trace = locktrace::trace_area_needed(kBufferSize, buffers, cpus);
        size_ = region_size_needed(cpus, trace);
        fd_ = memfd_create("spinlab-test-region", MFD_CLOEXEC);
        if (fd_ < 0 || ftruncate(fd_, off_t(size_)) != 0) throw std::runtime_error("memfd");
        void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) throw std::runtime_error("mmap");
        base_ = static_cast<uint8_t*>(p);
        if (region_layout(base_, size_, cpus, 2'000'000'000, 1) != RegionError::kNone)
            throw std::runtime_error("region_layout");
        RegionLayout l;
        if (region_parse(base_, size_, &l) != RegionError::kNone) throw std::runtime_error("parse");
        layout_ = l;
        for (uint32_t k = 0; k < cpus; k++) {
            CpuPerfData* d = perf(k);
            d->magic = kPerfDataMagic;
            d->version = kPerfDataVersion;
            d->cpu = k;
            d->size = sizeof(CpuPerfData);
        }
        clock_publish(clock(), 1000, 0, 10'000);
        TraceSessionInformation s = locktrace::default_session_params();
        s.buffer_size = kBufferSize;
        s.minimum_buffers = buffers;
        s.maximum_buffers = buffers;
        s.logger_mode = uint32_t(mode);
        const RegionSectionEntry& t = layout_.section(RegionSection::kTrace);
        locktrace::SessionPlan plan;
        if (!locktrace::plan_session(s, t.size, cpus, &plan)) throw std::runtime_error("plan");
        locktrace::area_start(area(), t.size, cpus, s, plan, 42, 1000);
    }
    ~MemRegion() {
        munmap(base_, size_);
        close(fd_);
    }
    MemRegion(const MemRegion&) = delete;
    MemRegion& operator=(const MemRegion&) = delete;

    static constexpr uint32_t kBufferSize = 4096;
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
    uint8_t* base() const { return base_; }
    uint64_t size() const { return size_; }
    uint32_t cpus() const { return cpus_; }
    const RegionLayout& layout() const { return layout_; }
    RegionHeader* header() const { return reinterpret_cast<RegionHeader*>(base_); }
    ClockArea* clock() const {
        return reinterpret_cast<ClockArea*>(base_ + layout_.section(RegionSection::kClock).offset);
    }
    CpuPerfData* perf(uint32_t k) const {
        return const_cast<CpuPerfData*>(region_cpu(base_, layout_, k));
    }
    void* area() const { return base_ + layout_.section(RegionSection::kTrace).offset; }
    uint64_t area_size() const { return layout_.section(RegionSection::kTrace).size; }
    TraceAreaHeader* area_header() const { return static_cast<TraceAreaHeader*>(area()); }
    TraceCpuControl* control(uint32_t k) const { return locktrace::area_control(area(), k); }

    // CPU k publishes `n` buffers of `events` syscall-exit events each (the real writer).
    // Returns how many buffers it published (real-time: fewer when the host does not drain).
    uint32_t publish(uint32_t k, uint32_t n, uint32_t events = 3) {
        locktrace::Writer w;
        locktrace::writer_arm(w, area(), k);
        uint32_t done = 0;
        for (uint32_t b = 0; b < n; b++) {
            for (uint32_t e = 0; e < events; e++) {
                constexpr uint32_t size = sizeof(TraceSyscallExitEvent);
                void* p = locktrace::begin_write(w, size);
                if (p == nullptr) continue;
                TraceSyscallExitEvent ev{};
                locktrace::fill_header(ev.h, size, TraceEventType::kSyscallExit, k, 1, 1, tsc_);
                ev.number = tsc_++;
                std::memcpy(p, &ev, size);
                locktrace::end_write(w, size, ev.h.tsc);
            }
            if (locktrace::flush(w, 0)) done++;
        }
        return done;
    }

private:
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    uint32_t cpus_ = 0;
    uint64_t tsc_ = 100;
    RegionLayout layout_{};
};

}  // namespace spinlab::testing
