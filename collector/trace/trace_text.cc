// collector/trace/trace_text.cc: see trace_text.h.
#include "trace_text.h"

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>

#include <cstring>
#include <sstream>

#include "trace_export_fields.h"

namespace spinlab::collect {
namespace {

std::string cpu_name(uint64_t cpu) { return cpu == kNoCpu ? "-" : std::to_string(cpu); }

// Element i of field f of the event at ev, widened (sign-extended where the member is signed).
uint64_t element(const uint8_t* ev, const PayloadField& f, uint32_t i) {
    uint64_t v = 0;
    std::memcpy(&v, ev + f.offset + size_t(f.width) * i, f.width);  // little-endian, as the guest
    if (f.is_signed && f.width < 8 && (v >> (8 * f.width - 1)) & 1) v |= ~uint64_t(0) << (8 * f.width);
    return v;
}

struct BitName {
    uint64_t bit;
    const char* name;
};

// The bits of v set, by name, comma-separated ("none" when none is).
template <size_t N>
std::string bits_text(uint64_t v, const BitName (&names)[N]) {
    std::string s;
    for (const BitName& b : names)
        if (v & b.bit) s += (s.empty() ? "" : ",") + std::string(b.name);
    return s.empty() ? "none" : s;
}

// A spinlock event's rules and flags (trace.h's kTraceRule* and kTraceSpin*).
constexpr BitName kRuleNames[] = {{kTraceRuleAcquireSample, "acquire-sample"},
                                  {kTraceRuleContention, "contention"},
                                  {kTraceRuleHold, "hold"},
                                  {kTraceRuleLongWait, "long-wait"}};
constexpr BitName kSpinFlagNames[] = {{kTraceSpinContended, "contended"},
                                      {kTraceSpinWaitOverflow, "wait-overflow"},
                                      {kTraceSpinHoldOverflow, "hold-overflow"},
                                      {kTraceSpinWaitOnly, "wait-only"},
                                      {kTraceSpinHandoversCounted, "handovers-counted"},
                                      {kTraceSpinWaiterCpuTookNone, "waiter-cpu-took-none"}};

bool stack_names_an_event(uint16_t type) {
    return type == uint16_t(TraceEventType::kStackReference) ||
           type == uint16_t(TraceEventType::kStackWalk);
}

// A value as people read it: an enum's name, a CPU ("-" for none), an address in hex.
std::string value_text(uint16_t type, std::string_view name, uint64_t v, bool is_signed) {
    const bool spinlock = type == uint16_t(TraceEventType::kSpinlock);
    if (name == "lhp_class") return lhp_class_name(static_cast<LhpClass>(v));
    if (name == "lock_algorithm") return lock_algorithm_name(static_cast<LockAlgorithm>(v));
    if (name == "clock_source") return clock_source_name(static_cast<ClockSource>(v));
    if (name == "instrument_level") return instrument_level_name(static_cast<InstrumentLevel>(v));
    if (name == "walk_end" || name == "user_end") return trace_stack_end_name(uint8_t(v));
    if (name == "event_type") return trace_event_type_name(uint16_t(v));
    if (name == "holder_cpu_start" || name == "holder_cpu_end" || name == "affinity_cpu") return cpu_name(v);
    if (name == "result") return std::to_string(int64_t(v));  // a system call's: negative errors
    if (spinlock && name == "rules") return bits_text(v, kRuleNames);
    if (spinlock && name == "flags") return bits_text(v, kSpinFlagNames);
    if (shown_in_hex(name)) {
        std::ostringstream o;
        o << "0x" << std::hex << v;
        return o.str();
    }
    return is_signed ? std::to_string(int64_t(v)) : std::to_string(v);
}

}  // namespace

std::string trace_event_line(const TraceEventHeader& h, const uint8_t* ev) {
    std::ostringstream o;
    o << h.tsc << " cpu=" << h.cpu << " thread_id=" << h.thread_id << " process_id=" << h.process_id
      << " " << trace_event_type_name(h.type);
    uint64_t nframes = 0;
    for (const PayloadField& f : payload_fields(h.type)) {
        const std::string_view name = f.name;
        if (name == kStackFramesLength) nframes = element(ev, f, 0);
        if (name == "reserved" || name == kStackFramesLength) continue;
        // a spinlock event's count of the holds begun during its wait, where the guest counted it
        if (name == "handovers" && h.type == uint16_t(TraceEventType::kSpinlock) &&
            !(ev[offsetof(TraceSpinlockEvent, flags)] & kTraceSpinHandoversCounted))
            continue;
        if ((name == "event_type" || name == "event_tsc") && !stack_names_an_event(h.type)) continue;
        o << " " << name << "=";
        if (f.text) {
            const char* text = reinterpret_cast<const char*>(ev + f.offset);
            o << std::string(text, strnlen(text, f.count));
            continue;
        }
        for (uint32_t i = 0; i < f.count; i++)
            o << (i ? "," : "") << value_text(h.type, name, element(ev, f, i), f.is_signed);
    }
    if (nframes) {  // the frames after the fixed part (parse_buffer checked the event's size)
        const auto fields = payload_fields(h.type);
        const size_t fixed = fields.back().offset + size_t(fields.back().width) * fields.back().count;
        o << " " << kStackFramesField << "=";
        for (uint64_t i = 0; i < nframes; i++) {
            uint64_t frame;
            std::memcpy(&frame, ev + fixed + 8 * i, 8);
            o << (i ? "," : "") << value_text(h.type, kStackFramesField, frame, false);
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
