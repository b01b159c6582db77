// collector/trace/trace_stack_dump.cc: see trace_stack_dump.h.
#include "trace_stack_dump.h"

#include <spinlab/syscall.h>

#include <cstring>
#include <sstream>

namespace spinlab::collect {

void StackDump::learn(const TraceEventHeader& h, const uint8_t* ev) {
    decoder_.learn(h, ev);
    const auto type = TraceEventType(h.type);
    // A process's program: its own name (process events) or its threads' (a user thread is
    // named after the program it runs).
    if (type == TraceEventType::kSystemConfig) {
        TraceSystemConfigEvent e;
        std::memcpy(&e, ev, sizeof e);
        build_id_ = std::string(e.build_id, strnlen(e.build_id, sizeof e.build_id));
    } else if (type == TraceEventType::kProcessStart || type == TraceEventType::kProcessRundown) {
        TraceProcessEvent e;
        std::memcpy(&e, ev, sizeof e);
        programs_[e.process_id] = std::string(e.name, strnlen(e.name, sizeof e.name));
    } else if (type == TraceEventType::kThreadStart || type == TraceEventType::kThreadRundown) {
        TraceThreadEvent e;
        std::memcpy(&e, ev, sizeof e);
        if (e.process_id != 0 && !programs_.count(e.process_id))
            programs_[e.process_id] = std::string(e.name, strnlen(e.name, sizeof e.name));
    }
}

std::string StackDump::symbol(uint64_t addr, bool return_address, const std::string& program) const {
    auto [it, fresh] = looked_up_.try_emplace({addr, return_address, program});
    if (fresh)
        it->second = Symbolizer::text(program.empty() ? sym_.kernel(addr, return_address)
                                                      : sym_.user(program, addr, return_address));
    return it->second;
}

std::string StackDump::frame_text(uint64_t addr, bool return_address, uint32_t pid) const {
    std::ostringstream o;
    o << "0x" << std::hex << addr << std::dec << " ";
    if (addr < kUserBase) {
        o << symbol(addr, return_address, "");
        return o.str();
    }
    auto it = programs_.find(pid);
    if (it == programs_.end()) {
        o << "[pid " << pid << "] ? (no program name for this process in the trace: record the process group)";
        return o.str();
    }
    o << "[" << it->second << "] ";
    if (!sym_.has_program(it->second)) o << "? (" << it->second << " is not in the initrd given)";
    else o << symbol(addr, return_address, it->second);
    return o.str();
}

std::string StackDump::frame_name(uint64_t addr, bool return_address, uint32_t pid) const {
    std::string program;
    if (addr >= kUserBase) {
        auto it = programs_.find(pid);
        if (it == programs_.end()) program = "?";
        else program = it->second;
    }
    const SymbolPlace p = addr < kUserBase ? sym_.kernel(addr, return_address)
                          : sym_.has_program(program) ? sym_.user(program, addr, return_address)
                                                      : SymbolPlace{};
    std::ostringstream o;
    if (!program.empty()) o << "[" << program << "] ";
    if (p.known) o << p.function;
    else o << "0x" << std::hex << addr;
    return o.str();
}

std::string StackDump::lines_after(const TraceEventHeader& h, const uint8_t* ev) {
    const StackPairer::Owner* owner = nullptr;
    const bool paired = pairer_.pair(h, ev, &owner);
    const std::optional<ResolvedStack> r = decoder_.resolve(h, ev);
    if (!r) return "";
    std::ostringstream o;
    o << "#   stack";
    if (r->key) o << " key=0x" << std::hex << r->key << std::dec;
    if (!paired) o << " of a " << trace_event_type_name(r->event_type) << " event at " << r->event_tsc
                   << " not in the trace;";
    if (r->kind == ResolvedStack::Kind::kLost) {
        lost_++;
        o << " LOST: no definition, delete or rundown of this key in the trace\n";
        return o.str();
    }
    (r->kind == ResolvedStack::Kind::kInline ? inline_ : resolved_)++;
    o << " depth=" << r->frames.size() << " walk_end=" << trace_stack_end_name(r->walk_end)
      << " user_end=" << trace_stack_end_name(r->user_end) << "\n";
    const uint32_t pid = paired ? owner->header.process_id : h.process_id;
    for (size_t i = 0; i < r->frames.size(); i++)
        o << "#     " << i << " " << frame_text(r->frames[i], i > 0, pid) << "\n";
    return o.str();
}

std::string StackDump::kernel_mismatch() const {
    if (!sym_.has_kernel() || build_id_.empty() || sym_.kernel_has_text(build_id_)) return "";
    return "the kernel ELF given is not the build the trace was recorded with (" + build_id_ +
           "): kernel frames may be misnamed";
}

std::string StackDump::summary() const {
    std::ostringstream o;
    o << "# stacks: " << resolved_ << " by reference, " << inline_ << " inline, " << lost_
      << " lost (definition not in the trace), " << pairer_.orphans() << " without their event, "
      << decoder_.keys() << " keys defined, " << decoder_.conflicts() << " keys with conflicting frames";
    return o.str();
}

}  // namespace spinlab::collect
