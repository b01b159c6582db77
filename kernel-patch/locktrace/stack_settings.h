// locktrace/stack_settings.h: the call-stack settings of trace sessions (TraceStackInformation,
// spinlab/trace.h): validation and clamping. Pure, freestanding: the kernel's sysinfo handler and
// the collector check them the same way.
//
// StackFlags, StackCaching and MaxStackDepth are validated like the session parameters: the first
// field out of its limits is named and nothing changes. BucketCount and CacheSize are clamped, as
// Windows does for its ETW stack cache: a value out of range selects the nearest valid one.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "trace_session.h"

namespace spinlab::locktrace {

constexpr uint32_t kStackParamCount = 3;
extern const SessionParamInfo kStackParamInfo[kStackParamCount];

// Default: no stacks, caching on, 32 frames, 256 buckets, 3 MB.
TraceStackInformation default_stack_settings();

// The first field that is not permitted, or null.
const SessionParamInfo* first_invalid_stack_param(const TraceStackInformation& in);

// The settings as a session uses them: BucketCount and CacheSize clamped (0: the default), the
// counters zeroed. `in` must be valid.
TraceStackInformation clamp_stack_settings(const TraceStackInformation& in);

}  // namespace spinlab::locktrace
