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

// SPINLAB_PAYLOAD_FIELDS(T, a, b, c) is {SPINLAB_PAYLOAD_FIELD(T, a), SPINLAB_PAYLOAD_FIELD(T, b),
// SPINLAB_PAYLOAD_FIELD(T, c)}: each struct named once, then its members in declaration order.
// It is the usual __VA_OPT__ recursion: SPINLAB_FIELDS_NEXT expands one member and leaves a call
// of itself for the next rescan; SPINLAB_RESCAN64 rescans 64 times (structs of up to 64 fields).
#define SPINLAB_PAYLOAD_FIELD(T, member) \
    ::spinlab::collect::payload_field<decltype(T::member)>(#member, offsetof(T, member))
#define SPINLAB_PAYLOAD_FIELDS(T, ...) \
    {__VA_OPT__(SPINLAB_RESCAN64(SPINLAB_FIELDS_NEXT(T, __VA_ARGS__)))}
#define SPINLAB_FIELDS_NEXT(T, member, ...) \
    SPINLAB_PAYLOAD_FIELD(T, member),       \
        __VA_OPT__(SPINLAB_FIELDS_AGAIN SPINLAB_PARENS(T, __VA_ARGS__))
#define SPINLAB_FIELDS_AGAIN() SPINLAB_FIELDS_NEXT
#define SPINLAB_PARENS ()
#define SPINLAB_RESCAN64(...) \
    SPINLAB_RESCAN16(SPINLAB_RESCAN16(SPINLAB_RESCAN16(SPINLAB_RESCAN16(__VA_ARGS__))))
#define SPINLAB_RESCAN16(...) \
    SPINLAB_RESCAN4(SPINLAB_RESCAN4(SPINLAB_RESCAN4(SPINLAB_RESCAN4(__VA_ARGS__))))
#define SPINLAB_RESCAN4(...) \
    SPINLAB_RESCAN1(SPINLAB_RESCAN1(SPINLAB_RESCAN1(SPINLAB_RESCAN1(__VA_ARGS__))))
#define SPINLAB_RESCAN1(...) __VA_ARGS__

inline constexpr PayloadField kSpinlockFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceSpinlockEvent, lock_address, call_site, acquire_tsc, release_tsc, wait_cycles, spin_count,
    holder_steal_ns, waiter_steal_ns, class_id, holder_cpu_start, holder_cpu_end, lhp_class, rules,
    flags, handovers);
inline constexpr PayloadField kContextSwitchFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceContextSwitchEvent, old_thread_id, new_thread_id, old_process_id, new_process_id,
    old_state, wait_reason, reserved);
inline constexpr PayloadField kReadyThreadFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceReadyThreadEvent, readied_thread_id, readied_process_id);
inline constexpr PayloadField kSyscallEnterFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceSyscallEnterEvent, number, args);
inline constexpr PayloadField kSyscallExitFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceSyscallExitEvent, number, result);
inline constexpr PayloadField kProfileFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceProfileEvent, instruction_pointer, user_mode, reserved);
inline constexpr PayloadField kProcessFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceProcessEvent, process_id, parent_id, exit_code, reserved, name);
inline constexpr PayloadField kThreadFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceThreadEvent, thread_id, process_id, affinity_cpu, reserved, name);
inline constexpr PayloadField kMemoryFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceMemoryEvent, virtual_address, length, process_id, flags);
inline constexpr PayloadField kSystemConfigFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceSystemConfigEvent, cpu_count, lock_algorithm, tsc_hz, clock_source, instrument_level,
    hypervisor_signature, build_id);

// The fixed part of the stack events; the frames follow as a sequence of nframes 64-bit
// addresses (trace_event_has_frames; kStackFramesField below).
inline constexpr PayloadField kStackFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceStackEvent, key, event_tsc, event_type, depth, nframes, walk_end, user_end);
inline constexpr PayloadField kStackCountersFields[] = SPINLAB_PAYLOAD_FIELDS(
    TraceStackCountersEvent, hits, misses, uncached, evictions, definitions_written,
    deletes_written, rundowns_written, walks_stopped);

#undef SPINLAB_RESCAN1
#undef SPINLAB_RESCAN4
#undef SPINLAB_RESCAN16
#undef SPINLAB_RESCAN64
#undef SPINLAB_PARENS
#undef SPINLAB_FIELDS_AGAIN
#undef SPINLAB_FIELDS_NEXT
#undef SPINLAB_PAYLOAD_FIELDS
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
