// selftest/trace_calls.h: the trace session's set and query through the system-information
// handler, as a guest program's system call reaches it, for the in-guest trace suites
// (trace_test.cc, trace_modes_test.cc). A query that fails fails the test.
#pragma once

#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include "../kern/selftest.h"
#include "../kern/sysinfo_glue.h"
#include "../sysinfo/memory_buffer.h"

namespace selftest_trace {

inline spinlab::Status trace_set(spinlab::TraceSessionInformation& s, bool privileged = true) {
    spinlab::sysinfo::MemoryBufferState st{reinterpret_cast<uint8_t*>(&s), sizeof s};
    uint32_t r;
    return spinlab::Status(sysinfo_set(uint32_t(spinlab::InfoClass::kSystemPerformanceTraceInformation),
                                       spinlab::sysinfo::memory_buffer(st), privileged, &r));
}

inline spinlab::TraceSessionInformation trace_query() {
    spinlab::TraceSessionInformation s{};
    s.event_trace_information_class = spinlab::kSpinlabTraceSession;
    spinlab::sysinfo::MemoryBufferState st{reinterpret_cast<uint8_t*>(&s), sizeof s};
    uint32_t r;
    const spinlab::Status q = spinlab::Status(sysinfo_query(
        uint32_t(spinlab::InfoClass::kSystemPerformanceTraceInformation), spinlab::sysinfo::memory_buffer(st), &r));
    if (q != spinlab::Status::kSuccess) selftest_fail(__FILE__, __LINE__, "query: %s", spinlab::status_name(q));
    return s;
}

}  // namespace selftest_trace
