// locktrace/test_area.h: a trace area in host memory for the tests and the benchmark.
#pragma once

#include <spinlab/trace.h>

#include <cstdlib>
#include <memory>

#include "trace_session.h"

namespace spinlab::locktrace::testing {

struct TestArea {
    std::unique_ptr<uint8_t, decltype(&std::free)> mem{nullptr, &std::free};
    uint64_t size = 0;
    void* area() const { return mem.get(); }
    const TraceAreaHeader& header() const { return *static_cast<const TraceAreaHeader*>(area()); }
};

// Lays out a session with `buffers` buffers per CPU of `buffer_size` bytes (MaximumBuffers);
// min_buffers (0: all of them) are allocated at the start, the rest on demand.
inline TestArea make_area(uint32_t cpus, uint32_t buffer_size, uint32_t buffers,
                          TraceLoggerMode mode, uint64_t session_id = 7, uint32_t min_buffers = 0) {
    TestArea a;
    a.size = trace_area_needed(buffer_size, buffers, cpus);
    a.mem.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, (a.size + 4095) & ~uint64_t(4095))));
    TraceSessionInformation p = default_session_params();
    p.buffer_size = buffer_size;
    p.minimum_buffers = min_buffers ? min_buffers : buffers;
    p.maximum_buffers = buffers;
    p.logger_mode = static_cast<uint32_t>(mode);
    SessionPlan plan;
    if (!plan_session(p, a.size, cpus, &plan)) std::abort();
    area_start(a.area(), a.size, cpus, p, plan, session_id, 1000);
    return a;
}

}  // namespace spinlab::locktrace::testing
