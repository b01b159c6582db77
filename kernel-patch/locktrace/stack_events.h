// locktrace/stack_events.h: writing an event's call stack into the trace (spinlab/trace.h, "call
// stacks"): through the CPU's stack cache as a reference (with a definition on first use and a
// delete for a stack it evicts), or inline; and the rundown of the cache at session stop. Pure,
// freestanding: the kernel's trace layer and the host tests and benchmarks use the same code.
//
// Per CPU, like the writer: the caller runs it on the CPU that owns `writer` and `cache`, with
// interrupts off, right after the event the stack belongs to. Each CPU has its own cache (no
// lock: the instrumentation adds no lock class), and its references name only its own keys.
// A stack event that finds no room is lost and counted like any event; the counters
// (TraceCpuControl.stack_*) say which definitions were written, so a reader can tell.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "../stackwalk/stack_cache.h"
#include "writer.h"

namespace spinlab::locktrace {

// One walked stack: kernel frames first, then the user part.
struct StackSample {
    const uint64_t* frames;
    uint32_t depth;    // 1..kTraceMaxStackFrames (0: nothing is written)
    uint8_t walk_end;  // TraceStackEnd of the kernel part
    uint8_t user_end;  // TraceStackEnd of the user part
};

struct StackEventContext {
    Writer* writer;
    stackwalk::StackCache* cache;  // null: every stack inline (StackCaching 0)
    uint64_t* scratch;             // kTraceMaxStackFrames frames: an evicted stack's
    uint32_t cpu, thread_id, process_id;
};

// The stack of the event of type event_type written at event_tsc (the stack events get the
// same TSC). Writes [delete] [definition] reference, or a walk.
void write_event_stack(const StackEventContext& c, const StackSample& s, uint16_t event_type,
                       uint64_t event_tsc);

// At session stop: a rundown event for every cached stack, then this CPU's counters event.
void write_stack_rundown(const StackEventContext& c, uint64_t tsc);

// Bytes an event's stack costs in the trace: inline, and as a reference (for the benchmark).
constexpr uint32_t stack_walk_bytes(uint32_t depth) { return sizeof(TraceStackEvent) + 8 * depth; }
constexpr uint32_t stack_reference_bytes() { return sizeof(TraceStackEvent); }

}  // namespace spinlab::locktrace
