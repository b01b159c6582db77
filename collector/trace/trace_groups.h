// collector/trace/trace_groups.h: the trace enable groups (spinlab/trace.h's TraceGroup bits) as
// the names people write and read: `--enable`, `--stack-enable`, the runner's trace.enable and
// trace.stack-enable, trace status, the results' session.json and the CTF metadata.
#pragma once
#include <cstdint>
#include <string>

namespace spinlab::collect {

// Flags as "spinlock,cswitch,..." ("none" for 0).
std::string trace_groups_text(uint32_t flags);

// "spinlock,cswitch" or "all" to flags; throws CollectError(kExitUsage) naming `what`, the option
// or key, and the unknown group.
uint32_t parse_trace_groups(const std::string& text, const std::string& what = "--enable");

}  // namespace spinlab::collect
