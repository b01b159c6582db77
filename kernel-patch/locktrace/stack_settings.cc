// locktrace/stack_settings.cc: see stack_settings.h.
#include "stack_settings.h"

#include "../stackwalk/stack_cache.h"

namespace spinlab::locktrace {

static_assert(kTraceMinBucketCount == stackwalk::kMinBucketCount &&
                  kTraceMaxBucketCount == stackwalk::kMaxBucketCount &&
                  kTraceMinStackCacheSize == stackwalk::kMinCacheSize &&
                  kTraceMaxStackCacheSize == stackwalk::kMaxCacheSize &&
                  kTraceMaxStackFrames == stackwalk::kMaxStackDepth,
              "the ABI's limits are the stack cache's");

const SessionParamInfo kStackParamInfo[kStackParamCount] = {
    {"StackFlags", offsetof(TraceStackInformation, stack_flags), 0, kTraceStackGroups,
     "groups spinlock, cswitch, ready, syscall, profile, long-wait only"},
    {"StackCaching", offsetof(TraceStackInformation, caching), 0, 1,
     "1 the stack cache, 0 every stack inline"},
    {"MaxStackDepth", offsetof(TraceStackInformation, max_depth), 1, kTraceMaxStackFrames,
     "frames"},
};

TraceStackInformation default_stack_settings() {
    TraceStackInformation s;
    __builtin_memset(&s, 0, sizeof s);
    s.event_trace_information_class = kSpinlabTraceStacks;
    s.caching = 1;
    s.max_depth = 32;
    s.bucket_count = stackwalk::kDefaultBucketCount;
    s.cache_size = stackwalk::kDefaultCacheSize;
    return s;
}

const SessionParamInfo* first_invalid_stack_param(const TraceStackInformation& in) {
    for (const SessionParamInfo& p : kStackParamInfo) {
        uint32_t v;
        __builtin_memcpy(&v, reinterpret_cast<const char*>(&in) + p.offset, sizeof v);
        if (v < p.minimum || v > p.maximum) return &p;
    }
    if (in.stack_flags & ~kTraceStackGroups) return &kStackParamInfo[0];
    return nullptr;
}

TraceStackInformation clamp_stack_settings(const TraceStackInformation& in) {
    TraceStackInformation s = default_stack_settings();
    s.stack_flags = in.stack_flags;
    s.caching = in.caching;
    s.max_depth = in.max_depth;
    s.bucket_count = stackwalk::clamp_bucket_count(in.bucket_count);
    s.cache_size = stackwalk::clamp_cache_size(in.cache_size);
    return s;
}

}  // namespace spinlab::locktrace
