// collector/trace/trace_groups.cc: see trace_groups.h.
#include "trace_groups.h"

#include <spinlab/trace.h>

#include "hostlib/error.h"

namespace spinlab::collect {

std::string trace_groups_text(uint32_t flags) {
    std::string s;
    for (uint32_t i = 0; i < kTraceGroupCount; i++)
        if (flags & (1u << i)) s += (s.empty() ? "" : ",") + std::string(trace_group_name(i));
    return s.empty() ? "none" : s;
}

uint32_t parse_trace_groups(const std::string& text, const std::string& what) {
    uint32_t flags = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t end = text.find(',', pos);
        const std::string w = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        bool known = false;
        if (w == "all") flags |= kTraceGroupAll, known = true;
        for (uint32_t i = 0; i < kTraceGroupCount && !known; i++)
            if (w == trace_group_name(i) || (trace_group_old_name(i) && w == trace_group_old_name(i)))
                flags |= 1u << i, known = true;
        if (!known)
            throw CollectError(kExitUsage, what + ": unknown group '" + w +
                                               "'; groups: all, spinlock, cswitch, ready, syscall, "
                                               "profile, process, memory, long-wait");
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return flags;
}

}  // namespace spinlab::collect
