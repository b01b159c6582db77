// kern/locktrace_stacks.cc: see locktrace_stacks.h.
#include "locktrace_stacks.h"

#include <spinlab/syscall.h>

#include "../arch/x86.h"
#include "../locktrace/trace_session.h"
#include "../locktrace/stack_events.h"
#include "../locktrace/stack_settings.h"
#include "../stackwalk/frame_walk.h"
#include "console.h"
#include "locktrace.h"
#include "mem.h"
#include "proc.h"
#include "sched.h"
#include "trap.h"
#include "address_space.h"

namespace {

namespace lt = spinlab::locktrace;
namespace sw = spinlab::stackwalk;
using spinlab::TraceStackEnd;

struct CpuStacks {
    sw::StackCache cache;
    bool cached;  // the cache is laid out for this session
    uint64_t frames[spinlab::kTraceMaxStackFrames];
    uint64_t scratch[spinlab::kTraceMaxStackFrames];  // an evicted stack's frames
};
CpuStacks stacks[kMaxCpus];

// The settings the next start uses (set) and those of the current or last session. Written by
// the controlling CPU under the sysinfo set lock while no session runs.
spinlab::TraceStackInformation pending;  // locktrace_stacks_init
spinlab::TraceStackInformation active;

uint8_t* memory;  // the caches of all CPUs
uint64_t memory_pages;

// The walker checks the bounds before every read, so a kernel read is a plain load.
bool read_kernel(void*, uint64_t addr, uint64_t* out) {
    *out = *reinterpret_cast<const volatile uint64_t*>(addr);
    return true;
}
bool read_user(void* as, uint64_t addr, uint64_t* out) {
    return copy_from_user_active(static_cast<AddressSpace*>(as), out, addr, 8) == 0;
}

uint32_t tid_of(const Thread* t) { return t ? uint32_t(t->tid) : 0; }
uint32_t pid_of(const Thread* t) { return t && t->proc ? uint32_t(t->proc->pid) : 0; }

// The user thread's ring-3 registers: the trap frame at the top of its kernel stack (the TSS's
// rsp0), when it came from ring 3.
const TrapFrame* user_frame(const Thread* t) {
    if (!t || !t->proc || !t->kstack) return nullptr;
    const auto* tf = reinterpret_cast<const TrapFrame*>(t->kstack + kKernelStackSize) - 1;
    return (tf->cs & 3) == 3 ? tf : nullptr;
}

// Kernel part from (rip, rbp) (none when kernel is false), then the user part.
spinlab::locktrace::StackSample walk(uint32_t cpu, bool kernel, uint64_t rip, uint64_t rbp) {
    CpuStacks& s = stacks[cpu];
    const Thread* t = this_cpu()->current;
    const uint32_t max = active.max_depth;
    uint32_t n = 0;
    uint8_t kend = uint8_t(TraceStackEnd::kNone), uend = uint8_t(TraceStackEnd::kNone);
    if (kernel) {
        // The current thread's own stack, when the walk starts on it. Otherwise this CPU runs
        // on its boot stack (its idle thread, which also writes the context switches of the
        // thread it switches to and from), of the same size: bounded from the first frame up.
        const uint64_t lo = t && t->kstack ? uint64_t(t->kstack) : 0;
        const sw::StackBounds b = lo && rbp >= lo && rbp < lo + kKernelStackSize
                                      ? sw::StackBounds{lo, lo + kKernelStackSize}
                                      : sw::StackBounds{rbp, rbp + kKernelStackSize};
        const sw::WalkResult r = sw::walk_frames(rip, rbp, b, read_kernel, nullptr, s.frames, max);
        n = r.depth;
        kend = uint8_t(r.end);
    }
    if (const TrapFrame* u = user_frame(t); u && n < max) {
        const sw::WalkResult r = sw::walk_frames(u->rip, u->rbp, {spinlab::kUserBase, spinlab::kUserLimit},
                                                 read_user, t->proc->as, s.frames + n, max - n);
        n += r.depth;
        uend = uint8_t(r.end);
    }
    return {s.frames, n, kend, uend};
}

void write(uint32_t cpu, const spinlab::locktrace::StackSample& sample, uint16_t type, uint64_t tsc) {
    CpuStacks& s = stacks[cpu];
    const Thread* t = this_cpu()->current;
    const lt::StackEventContext c{&locktrace_this_cpu()->writer, s.cached ? &s.cache : nullptr,
                                  s.scratch, cpu, tid_of(t), pid_of(t)};
    lt::write_event_stack(c, sample, type, tsc);
}

}  // namespace

void locktrace_stacks_init() { pending = active = lt::default_stack_settings(); }

spinlab::Status locktrace_stacks_set(const spinlab::TraceStackInformation& in) {
    spinlab::TraceSessionInformation q;
    locktrace_query(&q);
    if (q.state == uint32_t(spinlab::TraceState::kRunning)) return spinlab::Status::kInvalidParameter;
    if (lt::first_invalid_stack_param(in) != nullptr) return spinlab::Status::kInvalidParameter;
    pending = lt::clamp_stack_settings(in);
    return spinlab::Status::kSuccess;
}

void locktrace_stacks_query(spinlab::TraceStackInformation* out) {
    spinlab::TraceSessionInformation q;
    locktrace_query(&q);
    // Not running: the settings the next start uses; running: the session's.
    *out = q.state == uint32_t(spinlab::TraceState::kRunning) ? active : pending;
    out->event_trace_information_class = spinlab::kSpinlabTraceStacks;
    out->hits = out->misses = out->uncached = out->evictions = 0;
    out->definitions_written = out->deletes_written = out->rundowns_written = out->walks_stopped = 0;
    if (q.state == uint32_t(spinlab::TraceState::kIdle)) return;
    void* area = const_cast<void*>(locktrace_area());
    for (uint32_t k = 0; k < q.cpu_count; k++) {
        const spinlab::TraceCpuControl* c = lt::area_control(area, k);
        out->hits += c->stack_hits;
        out->misses += c->stack_misses;
        out->uncached += c->stack_uncached;
        out->evictions += c->stack_evictions;
        out->definitions_written += c->stack_definitions_written;
        out->deletes_written += c->stack_deletes_written;
        out->rundowns_written += c->stack_rundowns_written;
        out->walks_stopped += c->stack_walks_stopped;
    }
}

uint32_t locktrace_stacks_start(uint32_t ncpus) {
    active = pending;
    for (uint32_t k = 0; k < kMaxCpus; k++) stacks[k].cached = false;
    if (active.stack_flags == 0 || !active.caching) return active.stack_flags;
    // Each CPU gets an equal share of CacheSize for its pieces.
    const uint64_t share = active.cache_size / ncpus;
    const uint64_t per_cpu = (sw::stack_cache_bytes(active.bucket_count, share) + 63) & ~uint64_t(63);
    const uint64_t pages = (per_cpu * ncpus + 4095) / 4096;
    if (pages > memory_pages) {
        for (uint64_t i = 0; i < memory_pages; i++) page_free(uint64_t(memory) + i * 4096);
        memory = nullptr;
        memory_pages = 0;
        if (uint64_t p = pages_alloc(pages)) {
            memory = reinterpret_cast<uint8_t*>(p);
            memory_pages = pages;
        }
    }
    if (!memory) {
        kprintf("locktrace: no memory for the stack cache (%lu pages): stacks are written inline\n", pages);
        active.caching = 0;
        return active.stack_flags;
    }
    for (uint32_t k = 0; k < ncpus; k++) {
        stacks[k].cache.init(memory + per_cpu * k, active.bucket_count, share, uint8_t(k));
        stacks[k].cached = true;
    }
    return active.stack_flags;
}

__attribute__((noinline)) void locktrace_stack_here(uint32_t cpu, uint16_t type, uint64_t tsc) {
    // From the caller on: its return address here, its frame the one ours saved.
    const uint64_t rbp = *static_cast<const uint64_t*>(__builtin_frame_address(0));
    const uint64_t rip = uint64_t(__builtin_return_address(0));
    write(cpu, walk(cpu, true, rip, rbp), type, tsc);
}

void locktrace_stack_trap(uint32_t cpu, uint16_t type, uint64_t tsc, const TrapFrame* tf) {
    // Interrupted in ring 3: only the user part (walk() finds the same frame at the stack top).
    write(cpu, walk(cpu, !trap_from_user(tf), tf->rip, tf->rbp), type, tsc);
}

void locktrace_stack_rundown(uint32_t cpu, uint64_t tsc) {
    if (active.stack_flags == 0) return;
    CpuStacks& s = stacks[cpu];
    const Thread* t = this_cpu()->current;
    const lt::StackEventContext c{&locktrace_this_cpu()->writer, s.cached ? &s.cache : nullptr,
                                  s.scratch, cpu, tid_of(t), pid_of(t)};
    lt::write_stack_rundown(c, tsc);
}
