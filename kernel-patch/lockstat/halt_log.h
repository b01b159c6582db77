// lockstat/halt_log.h: writing and reading a CPU's HaltLog (perfdata.h), the ring of its halt
// spans. Pure logic over a HaltLog and TSC values the caller read; the kernel's glue
// (kern/lockstat.h: halt_log_begin/end/cancel) reads the TSC and compiles away at INSTRUMENT=0.
//
// The writer is the owning CPU with interrupts off around each call (perfdata.h's protocol):
//   enter = halt_log_enter(log, tsc)      just before the hlt: halted_since = enter
//   halt_log_exit(log, enter, tsc)        after it: spans[written % N] = {enter, tsc}, then
//                                         written + 1 (release), then halted_since = 0
//   halt_log_abandon(log, enter)          instead of exit when no hlt ran: halted_since = 0
// A halt inside another's span (an interrupt handler that woke the idle loop's hlt and then
// halts in pv_wait) is not logged: enter returns 0, and exit and abandon of 0 do nothing. The
// outer span covers it (it ends after the waking handler), and the spans stay ordered.
// halt_log_read is the guest's reader (its self-tests); the host has its own (collector/).
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

namespace spinlab::lockstat {

inline constexpr uint32_t halt_log_slot(uint64_t n) { return uint32_t(n % kHaltLogSpans); }

// halted_since == 0 means "not halted", so an enter TSC of 0 is logged as 1.
inline uint64_t halt_log_enter(HaltLog& log, uint64_t tsc) {
    if (__atomic_load_n(&log.halted_since, __ATOMIC_RELAXED) != 0) return 0;  // nested
    const uint64_t enter = tsc ? tsc : 1;
    __atomic_store_n(&log.halted_since, enter, __ATOMIC_RELAXED);
    return enter;
}

inline void halt_log_exit(HaltLog& log, uint64_t enter, uint64_t tsc) {
    if (enter == 0) return;
    const uint64_t n = __atomic_load_n(&log.written, __ATOMIC_RELAXED);
    HaltSpan& s = log.spans[halt_log_slot(n)];
    __atomic_store_n(&s.enter_tsc, enter, __ATOMIC_RELAXED);
    __atomic_store_n(&s.exit_tsc, tsc, __ATOMIC_RELAXED);
    // Release: a reader that sees written == n + 1 sees span n whole.
    __atomic_store_n(&log.written, n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&log.halted_since, uint64_t(0), __ATOMIC_RELAXED);
}

inline void halt_log_abandon(HaltLog& log, uint64_t enter) {
    if (enter != 0) __atomic_store_n(&log.halted_since, uint64_t(0), __ATOMIC_RELAXED);
}

// What a reader (another CPU, a test) copied: spans [first, first + count), each whole.
struct HaltLogRead {
    uint64_t first;    // the index of out[0]
    uint32_t count;    // spans copied into out; a next copy goes on from first + count
    uint64_t lost;     // spans from `from` on overwritten before they could be read (first - from)
    uint64_t written;  // the writer's count as read after the copy
};

// Copies at most `cap` spans, the oldest still there from index `from` on, with perfdata.h's
// reader protocol: written (acquire), the spans, written again; span n is whole if
// n + kHaltLogSpans > the second written.
inline HaltLogRead halt_log_read(const HaltLog& log, uint64_t from, HaltSpan* out, uint32_t cap) {
    const uint64_t w1 = __atomic_load_n(&log.written, __ATOMIC_ACQUIRE);
    uint64_t first = from < w1 ? from : w1;
    if (w1 - first > kHaltLogSpans) first = w1 - kHaltLogSpans;
    const uint64_t end = w1 - first > cap ? first + cap : w1;
    for (uint64_t n = first; n < end; n++) {
        const HaltSpan& s = log.spans[halt_log_slot(n)];
        out[n - first].enter_tsc = __atomic_load_n(&s.enter_tsc, __ATOMIC_RELAXED);
        out[n - first].exit_tsc = __atomic_load_n(&s.exit_tsc, __ATOMIC_RELAXED);
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);  // the span loads above before the re-read
    const uint64_t w2 = __atomic_load_n(&log.written, __ATOMIC_RELAXED);
    // The writer of span w2 may be overwriting span w2 - kHaltLogSpans: below that, lost.
    const uint64_t whole_from = w2 >= kHaltLogSpans ? w2 - kHaltLogSpans + 1 : 0;
    const uint64_t skip = whole_from <= first ? 0 : whole_from - first < end - first ? whole_from - first
                                                                                     : end - first;
    HaltLogRead c{first + skip, uint32_t(end - first - skip), 0, w2};
    for (uint32_t i = 0; i < c.count; i++) out[i] = out[i + skip];
    c.lost = c.first > from ? c.first - from : 0;
    return c;
}

}  // namespace spinlab::lockstat
