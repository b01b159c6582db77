// collector/trace/trace_stack_dump.h: `trace dump --stacks`: each event's call stack under it,
// symbolized. Kernel frames (below kUserBase) through the kernel ELF; user frames through the
// program of the event's process, named by the trace's process or thread events (all programs
// are linked at the same base, so without a name a user frame stays a bare address).
//
//   <event line>
//   #   stack key=0x.. depth=N kernel_end=end user_end=end
//   #     0 0x10a3b2 spin_unlock+0x22 (spinlock.cc:123)
//   #     5 0x8000001234 [lockbench] worker+0x10 (lockbench.cc:55)
//   #   stack key=0x.. LOST: no definition, delete or rundown of this key in the trace
#pragma once
#include <spinlab/trace.h>

#include <map>
#include <tuple>
#include <string>

#include "symbolizer.h"
#include "trace_stacks.h"

namespace spinlab::collect {

class StackDump {
public:
    explicit StackDump(const Symbolizer& sym) : sym_(sym) {}
    // Pass 1: every event of the trace.
    void learn(const TraceEventHeader& h, const uint8_t* ev);
    // Pass 2, in each CPU's order: the comment lines to print after this event's line ("" for
    // events that are not a stack of the event before).
    std::string lines_after(const TraceEventHeader& h, const uint8_t* ev);
    // "# stacks: ..." totals.
    std::string summary() const;
    // Empty, or why the kernel's frames may be misnamed: the trace's build id (its configuration
    // event) is not in the kernel ELF given.
    std::string kernel_mismatch() const;

    // One frame as printed (without the "#     i " prefix).
    std::string frame_text(uint64_t addr, bool return_address, uint32_t pid) const;
    // One frame as a name only: "function", "[program] function", or "0x..." when unknown (the
    // folded stacks and the table of call sites).
    std::string frame_name(uint64_t addr, bool return_address, uint32_t pid) const;

    const StackDecoder& decoder() const { return decoder_; }

private:
    std::string symbol(uint64_t addr, bool return_address, const std::string& program) const;

    const Symbolizer& sym_;
    StackDecoder decoder_;
    StackPairer pairer_;
    std::map<uint32_t, std::string> programs_;  // process id -> program name
    // Frames repeat (that is what the cache is for): each one is looked up once.
    mutable std::map<std::tuple<uint64_t, bool, std::string>, std::string> looked_up_;
    uint64_t resolved_ = 0, inline_ = 0, lost_ = 0;
    std::string build_id_;  // of the trace's configuration event
};

}  // namespace spinlab::collect
