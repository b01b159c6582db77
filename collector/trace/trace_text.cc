// collector/trace/trace_text.cc: see trace_text.h.
#include "trace_text.h"

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>

#include <cstring>
#include <sstream>

#include "error.h"

namespace spinlab::collect {
namespace {

template <class E>
E load(const uint8_t* ev) {
    E e;
    std::memcpy(&e, ev, sizeof e);
    return e;
}

std::string cpu_name(uint32_t cpu) { return cpu == kNoCpu ? "-" : std::to_string(cpu); }

std::string text(const char* s, size_t n) { return std::string(s, strnlen(s, n)); }

}  // namespace

std::string trace_event_line(const TraceEventHeader& h, const uint8_t* ev) {
    std::ostringstream o;
    o << h.tsc << " cpu=" << h.cpu << " tid=" << h.thread_id << " pid=" << h.process_id << " "
      << trace_event_type_name(h.type);
    switch (static_cast<TraceEventType>(h.type)) {
        case TraceEventType::kSpinlock: {
            const auto e = load<TraceSpinlockEvent>(ev);
            o << std::hex << " lock=0x" << e.lock_address << " site=0x" << e.call_site << std::dec
              << " class=" << e.class_id << " acquire=" << e.acquire_tsc
              << " hold=" << (e.release_tsc >= e.acquire_tsc ? e.release_tsc - e.acquire_tsc : 0)
              << " wait=" << e.wait_cycles << " spins=" << e.spin_count
              << " holder_start=" << cpu_name(e.holder_cpu_start)
              << " holder_end=" << cpu_name(e.holder_cpu_end)
              << " lhp=" << lhp_class_name(static_cast<LhpClass>(e.lhp_class))
              << " holder_steal_ns=" << e.holder_steal_ns << " waiter_steal_ns=" << e.waiter_steal_ns
              << " rules=";
            const char* sep = "";
            if (e.rules & kTraceRuleAcquireSample) o << sep << "acquire-sample", sep = ",";
            if (e.rules & kTraceRuleContention) o << sep << "contention", sep = ",";
            if (e.rules & kTraceRuleHold) o << sep << "hold", sep = ",";
            if (e.rules & kTraceRuleLongWait) o << sep << "long-wait", sep = ",";
            if (!*sep) o << "none";
            o << " contended=" << ((e.flags & kTraceSpinContended) ? 1 : 0);
            break;
        }
        case TraceEventType::kContextSwitch: {
            const auto e = load<TraceContextSwitchEvent>(ev);
            o << " old_tid=" << e.old_thread_id << " new_tid=" << e.new_thread_id
              << " old_pid=" << e.old_process_id << " new_pid=" << e.new_process_id
              << " old_state=" << int(e.old_state) << " wait_reason=" << int(e.wait_reason);
            break;
        }
        case TraceEventType::kReadyThread: {
            const auto e = load<TraceReadyThreadEvent>(ev);
            o << " readied_tid=" << e.readied_thread_id << " readied_pid=" << e.readied_process_id;
            break;
        }
        case TraceEventType::kSyscallEnter: {
            const auto e = load<TraceSyscallEnterEvent>(ev);
            o << " number=" << e.number << std::hex << " args=0x" << e.args[0] << ",0x"
              << e.args[1] << ",0x" << e.args[2] << std::dec;
            break;
        }
        case TraceEventType::kSyscallExit: {
            const auto e = load<TraceSyscallExitEvent>(ev);
            o << " number=" << e.number << " result=" << int64_t(e.result);
            break;
        }
        case TraceEventType::kProfile: {
            const auto e = load<TraceProfileEvent>(ev);
            o << std::hex << " ip=0x" << e.instruction_pointer << std::dec
              << " user=" << e.user_mode;
            break;
        }
        case TraceEventType::kProcessStart:
        case TraceEventType::kProcessEnd:
        case TraceEventType::kProcessRundown: {
            const auto e = load<TraceProcessEvent>(ev);
            o << " process=" << e.process_id << " parent=" << e.parent_id
              << " exit_code=" << e.exit_code << " name=" << text(e.name, sizeof e.name);
            break;
        }
        case TraceEventType::kThreadStart:
        case TraceEventType::kThreadEnd:
        case TraceEventType::kThreadRundown: {
            const auto e = load<TraceThreadEvent>(ev);
            o << " thread=" << e.thread_id << " process=" << e.process_id
              << " affinity=" << cpu_name(e.affinity_cpu) << " name=" << text(e.name, sizeof e.name);
            break;
        }
        case TraceEventType::kMemoryMap:
        case TraceEventType::kMemoryUnmap: {
            const auto e = load<TraceMemoryEvent>(ev);
            o << std::hex << " va=0x" << e.virtual_address << std::dec << " length=" << e.length
              << " process=" << e.process_id << " flags=" << e.flags;
            break;
        }
        case TraceEventType::kSystemConfig: {
            const auto e = load<TraceSystemConfigEvent>(ev);
            o << " cpus=" << e.cpu_count << " tsc_hz=" << e.tsc_hz
              << " lock=" << lock_algorithm_name(static_cast<LockAlgorithm>(e.lock_algorithm))
              << " clock=" << clock_source_name(static_cast<ClockSource>(e.clock_source))
              << " instrument="
              << instrument_level_name(static_cast<InstrumentLevel>(e.instrument_level))
              << " hypervisor=" << text(e.hypervisor_signature, sizeof e.hypervisor_signature)
              << " build=" << text(e.build_id, sizeof e.build_id);
            break;
        }
        case TraceEventType::kStackDefinition:
        case TraceEventType::kStackReference:
        case TraceEventType::kStackDelete:
        case TraceEventType::kStackRundown:
        case TraceEventType::kStackWalk: {
            const auto e = load<TraceStackEvent>(ev);
            o << std::hex << " key=0x" << e.key << std::dec;
            if (h.type == uint16_t(TraceEventType::kStackReference) ||
                h.type == uint16_t(TraceEventType::kStackWalk))
                o << " event=" << trace_event_type_name(e.event_type) << " event_tsc=" << e.event_tsc;
            o << " depth=" << e.depth << " kernel_end=" << trace_stack_end_name(e.walk_end)
              << " user_end=" << trace_stack_end_name(e.user_end);
            if (e.nframes) {
                o << std::hex << " frames=";
                for (uint32_t i = 0; i < e.nframes; i++) {
                    uint64_t f;
                    std::memcpy(&f, ev + sizeof e + 8 * i, 8);
                    o << (i ? ",0x" : "0x") << f;
                }
                o << std::dec;
            }
            break;
        }
        case TraceEventType::kStackCacheCounters: {
            const auto e = load<TraceStackCountersEvent>(ev);
            o << " hits=" << e.hits << " misses=" << e.misses << " uncached=" << e.uncached
              << " evictions=" << e.evictions << " definitions_written=" << e.definitions_written
              << " deletes_written=" << e.deletes_written
              << " rundowns_written=" << e.rundowns_written << " walks_stopped=" << e.walks_stopped;
            break;
        }
    }
    return o.str();
}

std::string trace_counters_line(const TraceLossCounters& c) {
    std::ostringstream o;
    o << "events_attempted=" << c.events_attempted << " events_written=" << c.events_written
      << " events_lost=" << c.events_lost << " buffers_written=" << c.buffers_written
      << " log_buffers_lost=" << c.log_buffers_lost
      << " realtime_buffers_lost=" << c.realtime_buffers_lost;
    return o.str();
}

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
            if (w == trace_group_name(i)) flags |= 1u << i, known = true;
        if (!known)
            throw CollectError(kExitUsage, what + ": unknown group '" + w +
                                               "'; groups: all, spinlock, cswitch, ready, syscall, "
                                               "profile, process, memory, longwait");
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return flags;
}

std::string trace_file_error_text(locktrace::FileError e, const void* data, size_t len) {
    if (e != locktrace::FileError::kBadVersion) return locktrace::file_error_name(e);
    std::string versions;
    for (size_t i = 0; i < locktrace::kTraceFileVersionCount; i++)
        versions += (i == 0 ? "" : i + 1 == locktrace::kTraceFileVersionCount ? " and " : ", ") +
                    std::to_string(locktrace::kTraceFileVersions[i].abi_version);
    return "trace file of ABI version " + std::to_string(locktrace::file_abi_version(data, len)) +
           ", which this spinlab does not read (it reads versions " + versions + ")";
}

}  // namespace spinlab::collect
