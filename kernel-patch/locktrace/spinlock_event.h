// locktrace/spinlock_event.h: the spinlock event written at release (spinlab/trace.h's
// TraceSpinlockEvent) from the facts the instrumented lock gathered at acquisition
// (spinlock::HoldTrace), after the sampling rules (sampling.h) decided. Pure: the kernel's
// spin_unlock and the host tests run the same code.
#pragma once

#include <spinlab/trace.h>
#include <stdint.h>

#include "../spinlock/lock.h"
#include "sampling.h"
#include "writer.h"

namespace spinlab::locktrace {

inline HoldFacts hold_facts(const spinlock::Lock& l, uint64_t release_tsc) {
    const spinlock::HoldTrace& t = l.trace;
    HoldFacts f;
    f.contended = t.contended;
    f.wait_overflow = t.wait_overflow;
    f.hold_overflow = release_tsc < t.acquire_tsc;
    f.spins = t.spins;
    f.wait_cycles = t.wait_cycles;
    f.hold_cycles = f.hold_overflow ? 0 : release_tsc - t.acquire_tsc;
    return f;
}

// Everything the release of `l` needs; the kernel fills it from its per-CPU state.
struct ReleaseContext {
    Writer* writer;
    SampleCountdowns* countdowns;
    const lockstat::SpinlockParams* params;
    uint32_t groups;            // the session's enable flags
    uint64_t long_wait_threshold;  // long-wait=
    uint32_t thread_id;
    uint32_t process_id;
};

// The payload of the event for the hold of `l` that ends at release_tsc (the header is the
// writer's: the kernel's for its own locks and for ring-3 ones, kSysTraceSpinlock; a ring-3
// thread's ring, user_ring.h, stamps it with release_tsc and the kernel fills in the rest).
inline void fill_spinlock_payload(TraceSpinlockEvent& e, const spinlock::Lock& l,
                                  const HoldFacts& f, uint64_t release_tsc, uint8_t rules) {
    const spinlock::HoldTrace& t = l.trace;
    e.lock_address = reinterpret_cast<uintptr_t>(&l);
    e.call_site = reinterpret_cast<uintptr_t>(l.holder_site);
    e.acquire_tsc = t.acquire_tsc;
    e.release_tsc = release_tsc;
    e.wait_cycles = f.contended && !f.wait_overflow ? t.wait_cycles : 0;
    e.spin_count = t.spins;
    e.holder_steal_ns = t.holder_steal_ns;
    e.waiter_steal_ns = t.waiter_steal_ns;
    e.class_id = l.class_id;
    e.holder_cpu_start = t.holder_cpu_start;
    e.holder_cpu_end = t.holder_cpu_end;
    e.lhp_class = t.lhp_class;
    e.rules = rules;
    const bool counted = f.contended && t.handovers_known;
    e.flags = uint8_t((f.contended ? kTraceSpinContended : 0) |
                      (f.wait_overflow ? kTraceSpinWaitOverflow : 0) |
                      (f.hold_overflow ? kTraceSpinHoldOverflow : 0) |
                      (counted ? kTraceSpinHandoversCounted : 0) |
                      (counted && t.waiter_cpu_took_none ? kTraceSpinWaiterCpuTookNone : 0));
    e.handovers = counted ? t.handovers : 0;
}

// The rules of `rules` that the session's enable flags allow: the long-wait rule needs the
// long-wait group, the three sampling rules the spinlock group.
constexpr uint8_t rules_enabled(uint8_t rules, uint32_t groups) {
    return uint8_t(rules & (((groups & kTraceGroupLongWait) ? kTraceRuleLongWait : 0) |
                            ((groups & kTraceGroupSpinlock)
                                 ? (kTraceRuleAcquireSample | kTraceRuleContention | kTraceRuleHold)
                                 : 0)));
}

// Decides whether the hold of `l` that ends at release_tsc makes an event: the rules that fire
// (0: none), its facts in *f. The sampling countdowns move: decide once per release.
inline uint8_t decide_spinlock_release(const ReleaseContext& c, const spinlock::Lock& l,
                                       uint64_t release_tsc, HoldFacts* f) {
    *f = hold_facts(l, release_tsc);
    return sample_release(*c.countdowns, *c.params, c.groups, c.long_wait_threshold, *f);
}

// Fills the event decided above into `room` (from begin_write on c.writer) and ends the write.
inline void write_spinlock_event(const ReleaseContext& c, void* room, const spinlock::Lock& l,
                                 const HoldFacts& f, uint64_t release_tsc, uint8_t rules) {
    constexpr uint32_t size = sizeof(TraceSpinlockEvent);
    auto* e = static_cast<TraceSpinlockEvent*>(room);
    fill_header(e->h, size, TraceEventType::kSpinlock, c.writer->cpu, c.thread_id, c.process_id,
                release_tsc);
    fill_spinlock_payload(*e, l, f, release_tsc, rules);
    end_write(*c.writer, size, release_tsc);
}

// Decides and, if a rule fires, writes the event without waiting (no free buffer: lost,
// counted). Returns the rules that fired (0: none). The caller runs it with interrupts off on
// the releasing CPU, before the lock is let go. (The kernel uses the two halves above, so that
// a no-drop-stall session can wait for a buffer between them.)
inline uint8_t trace_spinlock_release(const ReleaseContext& c, const spinlock::Lock& l,
                                      uint64_t release_tsc) {
    HoldFacts f;
    const uint8_t rules = decide_spinlock_release(c, l, release_tsc, &f);
    if (rules == 0) return 0;
    if (void* room = begin_write(*c.writer, sizeof(TraceSpinlockEvent)))
        write_spinlock_event(c, room, l, f, release_tsc, rules);
    return rules;
}

}  // namespace spinlab::locktrace
