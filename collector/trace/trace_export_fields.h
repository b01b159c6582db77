// collector/trace/trace_export_fields.h: the fields of every trace event payload, taken from the ABI
// structs of spinlab/trace.h (the one source of truth), for the exporters (the CTF metadata and
// the Perfetto args).
//
// Why not a YAML description (barectf style) or a second layout table: both are a second
// definition of the layout that has to be kept equal to trace.h by hand. Here each field is named
// once, by its member name, and everything else comes from the struct itself: offset (offsetof),
// width, signedness and array length (the member's declared type). The compiler then checks
// that the named fields tile each struct exactly, from the end of the event header to
// sizeof(struct), without gap or overlap (static_asserts at the bottom): a field added, removed,
// resized or renamed in trace.h without the change here does not compile. The CTF payload of an
// event is therefore the native payload, byte for byte.
#pragma once

#include <spinlab/trace.h>
#include <stddef.h>
#include <stdint.h>

#include <span>
#include <string_view>
#include <type_traits>

namespace spinlab::collect {

struct PayloadField {
    const char* name;  // the member's name in trace.h
    uint32_t offset;   // from the start of the event (header included)
    uint32_t width;    // bytes of one element: 1, 2, 4 or 8
    uint32_t count;    // elements: 1 for a scalar, N for an array member
    bool is_signed;
    bool text;  // a char array: NUL-padded text
};

template <class M>
constexpr PayloadField payload_field(const char* name, size_t offset) {
    using E = std::remove_all_extents_t<M>;
    static_assert(std::is_integral_v<E>, "trace payload fields are integers or char arrays");
    return {name,
            uint32_t(offset),
            uint32_t(sizeof(E)),
            uint32_t(sizeof(M) / sizeof(E)),
            std::is_signed_v<E> && !std::is_same_v<E, char>,
            std::is_same_v<E, char>};
}

#define SPINLAB_PAYLOAD_FIELD(T, member) \
    ::spinlab::collect::payload_field<decltype(T::member)>(#member, offsetof(T, member))

inline constexpr PayloadField kSpinlockFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, lock_address),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, call_site),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, acquire_tsc),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, release_tsc),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, wait_cycles),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, spin_count),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, holder_steal_ns),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, waiter_steal_ns),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, class_id),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, holder_cpu_start),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, holder_cpu_end),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, lhp_class),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, rules),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, flags),
    SPINLAB_PAYLOAD_FIELD(TraceSpinlockEvent, reserved),
};
inline constexpr PayloadField kContextSwitchFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, old_thread_id),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, new_thread_id),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, old_process_id),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, new_process_id),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, old_state),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, wait_reason),
    SPINLAB_PAYLOAD_FIELD(TraceContextSwitchEvent, reserved),
};
inline constexpr PayloadField kReadyThreadFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceReadyThreadEvent, readied_thread_id),
    SPINLAB_PAYLOAD_FIELD(TraceReadyThreadEvent, readied_process_id),
};
inline constexpr PayloadField kSyscallEnterFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceSyscallEnterEvent, number),
    SPINLAB_PAYLOAD_FIELD(TraceSyscallEnterEvent, args),
};
inline constexpr PayloadField kSyscallExitFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceSyscallExitEvent, number),
    SPINLAB_PAYLOAD_FIELD(TraceSyscallExitEvent, result),
};
inline constexpr PayloadField kProfileFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceProfileEvent, instruction_pointer),
    SPINLAB_PAYLOAD_FIELD(TraceProfileEvent, user_mode),
    SPINLAB_PAYLOAD_FIELD(TraceProfileEvent, reserved),
};
inline constexpr PayloadField kProcessFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceProcessEvent, process_id),
    SPINLAB_PAYLOAD_FIELD(TraceProcessEvent, parent_id),
    SPINLAB_PAYLOAD_FIELD(TraceProcessEvent, exit_code),
    SPINLAB_PAYLOAD_FIELD(TraceProcessEvent, reserved),
    SPINLAB_PAYLOAD_FIELD(TraceProcessEvent, name),
};
inline constexpr PayloadField kThreadFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceThreadEvent, thread_id),
    SPINLAB_PAYLOAD_FIELD(TraceThreadEvent, process_id),
    SPINLAB_PAYLOAD_FIELD(TraceThreadEvent, affinity_cpu),
    SPINLAB_PAYLOAD_FIELD(TraceThreadEvent, reserved),
    SPINLAB_PAYLOAD_FIELD(TraceThreadEvent, name),
};
inline constexpr PayloadField kMemoryFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceMemoryEvent, virtual_address),
    SPINLAB_PAYLOAD_FIELD(TraceMemoryEvent, length),
    SPINLAB_PAYLOAD_FIELD(TraceMemoryEvent, process_id),
    SPINLAB_PAYLOAD_FIELD(TraceMemoryEvent, flags),
};
inline constexpr PayloadField kSystemConfigFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, cpu_count),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, lock_algorithm),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, tsc_hz),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, clock_source),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, instrument_level),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, hypervisor_signature),
    SPINLAB_PAYLOAD_FIELD(TraceSystemConfigEvent, build_id),
};

// The fixed part of the stack events; the frames follow as a sequence of nframes 64-bit
// addresses (trace_event_has_frames; kStackFramesField below).
inline constexpr PayloadField kStackFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, key),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, event_tsc),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, event_type),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, depth),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, nframes),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, walk_end),
    SPINLAB_PAYLOAD_FIELD(TraceStackEvent, user_end),
};
inline constexpr PayloadField kStackCountersFields[] = {
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, hits),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, misses),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, uncached),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, evictions),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, definitions_written),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, deletes_written),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, rundowns_written),
    SPINLAB_PAYLOAD_FIELD(TraceStackCountersEvent, walks_stopped),
};

#undef SPINLAB_PAYLOAD_FIELD

// The variable part of a type with frames: `frames`, nframes (the field of that name) 64-bit
// addresses after the fixed part.
inline constexpr const char* kStackFramesField = "frames";
inline constexpr const char* kStackFramesLength = "nframes";

// Addresses, shown in hex by the viewers (a display hint the ABI does not carry).
constexpr bool shown_in_hex(std::string_view name) {
    return name == "lock_address" || name == "call_site" || name == "instruction_pointer" ||
           name == "virtual_address" || name == "key" || name == kStackFramesField;
}

// The payload fields of an event type (empty for an unknown type).
constexpr std::span<const PayloadField> payload_fields(uint16_t type) {
    switch (static_cast<TraceEventType>(type)) {
        case TraceEventType::kSpinlock:
            return kSpinlockFields;
        case TraceEventType::kContextSwitch:
            return kContextSwitchFields;
        case TraceEventType::kReadyThread:
            return kReadyThreadFields;
        case TraceEventType::kSyscallEnter:
            return kSyscallEnterFields;
        case TraceEventType::kSyscallExit:
            return kSyscallExitFields;
        case TraceEventType::kProfile:
            return kProfileFields;
        case TraceEventType::kProcessStart:
        case TraceEventType::kProcessEnd:
        case TraceEventType::kProcessRundown:
            return kProcessFields;
        case TraceEventType::kThreadStart:
        case TraceEventType::kThreadEnd:
        case TraceEventType::kThreadRundown:
            return kThreadFields;
        case TraceEventType::kMemoryMap:
        case TraceEventType::kMemoryUnmap:
            return kMemoryFields;
        case TraceEventType::kSystemConfig:
            return kSystemConfigFields;
        case TraceEventType::kStackDefinition:
        case TraceEventType::kStackReference:
        case TraceEventType::kStackDelete:
        case TraceEventType::kStackRundown:
        case TraceEventType::kStackWalk:
            return kStackFields;
        case TraceEventType::kStackCacheCounters:
            return kStackCountersFields;
    }
    return {};
}

// The fields cover [sizeof(TraceEventHeader), size) in order, without gap or overlap.
constexpr bool tiles_payload(std::span<const PayloadField> fields, uint32_t size) {
    uint32_t at = sizeof(TraceEventHeader);
    for (const PayloadField& f : fields) {
        if (f.offset != at) return false;
        at += f.width * f.count;
    }
    return at == size;
}

constexpr bool every_type_tiles() {
    for (uint16_t t = 1; t <= kTraceEventTypeMax; t++)
        if (!tiles_payload(payload_fields(t), trace_event_size(t))) return false;
    return true;
}
static_assert(every_type_tiles(),
              "a payload struct of spinlab/trace.h changed: name its fields here, in order");
static_assert(trace_event_size(kTraceEventTypeMax + 1) == 0,
              "a new event type in spinlab/trace.h: add its fields here");

}  // namespace spinlab::collect
