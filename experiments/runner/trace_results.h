// experiments/runner/trace_results.h: what a repetition's trace file (spinlab/trace.h's format,
// written by the collector's TraceRecorder) gives the results: the session as it ran, the exact
// loss counters per CPU and in total (the file's counters frame), and the long waits: every
// spinlock event whose long-wait rule fired (each contended wait >= long-wait=, unsampled), with
// the hand-overs of the lock during each wait placed from the traced holds of the same lock.
// Pure apart from reading the file; tested with files written by the real writer code.
#pragma once
#include <spinlab/trace.h>

#include <cstdint>
#include <string>
#include <vector>

#include "results.h"
#include "snapshot.h"

namespace spinlab::run {

// The long wait a long-wait spinlock event stands for, `names` naming its class.
LongWaitEntry long_wait_from_event(const TraceSpinlockEvent& e, const collect::ClassNames& names);

// One traced hold of a lock (a spinlock event: written at release, whatever rule made it).
struct TracedHold {
    uint64_t lock = 0;       // lock_address
    uint32_t class_id = 0;   // with the address, what names the lock
    uint32_t cpu = 0;        // the holder
    uint64_t acquire_tsc = 0, release_tsc = 0;
    uint64_t wait_cycles = 0;                 // 0: uncontended
    uint32_t holder_cpu_start = kNoCpu;       // the holder seen when its wait began
    uint32_t holder_cpu_end = kNoCpu;         // whose release handed the lock to it
    // Holds begun on the lock during its wait, as the guest counted them (the event's
    // handovers under kTraceSpinHandoversCounted); -1: not counted.
    int handovers = -1;
    // The guest saw no hold of the lock's class begin on the waiter's own CPU during the wait
    // (kTraceSpinWaiterCpuTookNone): false where it did, or did not say.
    bool waiter_cpu_took_none = false;
};
TracedHold traced_hold(const TraceSpinlockEvent& e);

// The holders of the lock during each wait waits[k] (an index into holds), in order: the holds
// of one lock never overlap, so going back from the wait's own hold, the hold just before it
// (by acquire time) is the one that handed the lock over when it is by the CPU the later hold
// names as holder_cpu_end and was released during that later hold's wait. Each holder found
// comes with the moment the lock became its (HoldLink::from_tsc: the release of the hold before
// it when that one is linked too, else its own acquire stamp); the walk ends at the holder when
// the wait began (the lock its at or before the start). Where a link is missing (that hold was
// not traced) the CPU named is a holder from an unknown moment (nullopt) and the walk ends, as it
// does at a hold taken uncontended; the wait's own holder_cpu_start, when known and not the
// first CPU found, is put first. A wait whose guest counted no hold begun during it
// (TracedHold::handovers 0) has its holder_cpu_end alone, from the start: the count is exact
// where the stamps may lag. So does a wait in a guest of guest_cpus == 2 whose own CPU took no
// lock of its class during the wait (TracedHold::waiter_cpu_took_none) and held none at its
// start: every hold during it was the other CPU's. Empty when the wait's holder_cpu_end is not
// known. O(n log n) for the sort, then O(links) per wait. guest_cpus: 0 when not known.
std::vector<std::vector<HoldLink>> hand_over_chains(const std::vector<TracedHold>& holds,
                                                    const std::vector<size_t>& waits,
                                                    uint32_t guest_cpus = 0);

// Reads `path` (relative name `file` goes into the record). Long waits go to *long_waits
// (entries appended, with their holds placed and the steal times; dropped = the session's
// EventsLost, see TraceRecord). Throws
// std::runtime_error naming the file when it cannot be read or its header is bad; a damaged
// buffer or a cut-off tail is counted (damaged_frames), not fatal: the rest is kept.
TraceRecord read_trace_file(const std::string& path, const std::string& file,
                            const collect::ClassNames& names, LongWaits* long_waits);

}  // namespace spinlab::run
