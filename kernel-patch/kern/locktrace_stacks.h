// kern/locktrace_stacks.h: call stacks on trace events (spinlab/trace.h, "call stacks"): the
// frame-pointer walk of the kernel part and of a user thread's ring-3 part, the per-CPU stack
// caches, and the stack settings (sysinfo 0x1F / kSpinlabTraceStacks).
//
// Per-CPU caches, no lock. Each CPU owns a StackCache (stackwalk/stack_cache.h) over its share of
// CacheSize, used only by that CPU with interrupts off, like its trace writer. So the
// instrumentation adds no lock and no lock class: a shared cache would need one, taken inside
// every traced lock's release path, which would both perturb the waits being measured and
// recurse into its own tracing. The price: a stack seen on two CPUs is defined once per CPU, and
// each CPU's share of the pieces is CacheSize / CPUs. A reader needs no order across CPUs,
// since a CPU's references only name its own keys.
//
// The user part is read only through copy_from_user_active (kern/address_space.h): a checked copy that
// takes no lock, so a walk inside any lock's release path cannot deadlock on as->lock, and no
// event can come between an event and its stack.
#pragma once
#include <spinlab/status.h>
#include <spinlab/trace.h>
#include <stdint.h>

struct TrapFrame;

void locktrace_stacks_init();  // from locktrace_init: the default settings

// Set (privileged; refused while a session runs) and query. Status values of spinlab/status.h.
spinlab::Status locktrace_stacks_set(const spinlab::TraceStackInformation& in);
void locktrace_stacks_query(spinlab::TraceStackInformation* out);

// At a session start, all CPUs disarmed: lays out every CPU's cache with the settings (memory
// taken once, grown when a later session asks for more). Returns the session's StackFlags (0:
// no stacks, also when the memory could not be had).
uint32_t locktrace_stacks_start(uint32_t ncpus);

// This CPU, interrupts off, right after the event of `type` at `tsc` was written.
// Here: the stack of the caller. Trap: the interrupted context's (a profile sample).
void locktrace_stack_here(uint32_t cpu, uint16_t type, uint64_t tsc);
void locktrace_stack_trap(uint32_t cpu, uint16_t type, uint64_t tsc, const TrapFrame* tf);
// At this CPU's disarm on a stop: the rundown and the counters event.
void locktrace_stack_rundown(uint32_t cpu, uint64_t tsc);
