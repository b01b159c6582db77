// locktrace/user_ring.h: the user-mode logger (spinlab/trace.h, TraceUserRing): a thread's ring
// of spinlock events, filled in ring 3 with plain stores (UserRingWriter) and taken by the
// kernel into the stream of the CPU the thread runs on (user_ring_take), one CPU writer, with
// every record checked after it is copied out of the ring. Pure and freestanding: lockbench,
// the kernel, the host tests, the fuzzer and the benchmarks use the same code.
#pragma once

#include <spinlab/trace.h>
#include <stddef.h>
#include <stdint.h>

#include "../spinlock/lock.h"
#include "sampling.h"
#include "spinlock_event.h"
#include "writer.h"

namespace spinlab::locktrace {

inline constexpr uint64_t user_ring_bytes(uint32_t capacity) {
    return kTraceUserRingHeaderSize + uint64_t(capacity) * sizeof(TraceSpinlockEvent);
}
inline TraceSpinlockEvent* user_ring_records(TraceUserRing* r) {
    return reinterpret_cast<TraceSpinlockEvent*>(reinterpret_cast<uint8_t*>(r) + kTraceUserRingHeaderSize);
}

// --- ring 3: the thread that owns the ring ---------------------------------------------------

struct UserRingWriter {
    TraceUserRing* ring = nullptr;
    TraceSpinlockEvent* records = nullptr;
    uint64_t mask = 0;  // capacity - 1
    uint64_t head = 0;  // ours: records written
};

// False when the ring's header does not describe a ring this code can fill (capacity not a
// power of two up to kTraceUserRingCapacity, or another record size).
inline bool user_ring_writer_init(UserRingWriter& w, TraceUserRing* r) {
    const uint32_t cap = r->capacity;
    if (cap == 0 || cap > kTraceUserRingCapacity || (cap & (cap - 1)) != 0 ||
        r->record_size != sizeof(TraceSpinlockEvent))
        return false;
    w.ring = r;
    w.records = user_ring_records(r);
    w.mask = cap - 1;
    w.head = r->head;
    return true;
}

// Room for the next record, or null when the ring is full (the kernel has not taken enough).
inline TraceSpinlockEvent* user_ring_reserve(UserRingWriter& w) {
    const uint64_t tail = __atomic_load_n(&w.ring->tail, __ATOMIC_ACQUIRE);
    if (w.head - tail > w.mask) return nullptr;
    return &w.records[w.head & w.mask];
}

// Publishes the record user_ring_reserve gave room for.
inline void user_ring_commit(UserRingWriter& w) {
    w.head++;
    __atomic_store_n(&w.ring->head, w.head, __ATOMIC_RELEASE);
}

// The event could not be written (the ring stayed full): the kernel counts it lost.
inline void user_ring_note_full(UserRingWriter& w) {
    __atomic_store_n(&w.ring->full, w.ring->full + 1, __ATOMIC_RELEASE);
}

// The spinlock event of the hold of `l` that ends at release_tsc, rules decided by the caller
// (sample_release), into the ring. False when the ring is full (nothing written or counted).
// A ring-3 lock's release calls it with the lock still held, as the kernel writes its own.
inline bool user_ring_write_spinlock(UserRingWriter& w, const spinlock::Lock& l, const HoldFacts& f,
                                     uint64_t release_tsc, uint8_t rules) {
    TraceSpinlockEvent* e = user_ring_reserve(w);
    if (e == nullptr) return false;
    // The header's cpu, thread and process are the kernel's to fill when it takes the record.
    fill_header(e->h, sizeof(TraceSpinlockEvent), TraceEventType::kSpinlock, 0, 0, 0, release_tsc);
    fill_spinlock_payload(*e, l, f, release_tsc, rules);
    user_ring_commit(w);
    return true;
}

// --- the kernel: taking a ring's records into a CPU's stream ----------------------------------

// The kernel's own state of one ring (kernel memory: nothing here is the thread's to change).
struct UserRingCursor {
    TraceUserRing* ring = nullptr;  // the kernel's mapping of it; null: no ring
    uint32_t capacity = 0;
    uint64_t tail = 0;        // records taken
    uint64_t full_seen = 0;   // the ring's `full` as last counted
    uint64_t last_tsc = 0;    // timestamp of the last record written or lost
    uint64_t last_take = 0;   // the clock at the last take (or at init)
    uint64_t written = 0, lost = 0, rejected = 0, discarded = 0, takes = 0;
    bool must_wait = false;   // the last take stopped at a record that waits for a buffer
};

// Lays out a fresh ring in `mem` (user_ring_bytes(capacity) bytes, 8-aligned) and points the
// cursor at it. capacity: a power of two, at most kTraceUserRingCapacity. now: the clock.
void user_ring_init(UserRingCursor& c, void* mem, uint32_t capacity, uint64_t now = 0);

// A thread claims at most one event lost (its `full`) per this many clock cycles since the
// kernel last took its ring (a ring-3 event costs ~100 cycles natively): a larger claim is a
// scribble, counted in `rejected` and not as losses of the CPU.
inline constexpr uint64_t kUserRingCyclesPerLoss = 64;

// Where the records go.
struct UserRingTake {
    Writer* writer = nullptr;   // the CPU's writer; null: no session on the CPU (discard)
    uint32_t groups = 0;        // the session's enable flags on the CPU
    uint32_t cpu = 0;
    uint32_t thread_id = 0;
    uint32_t process_id = 0;
    uint64_t session_start_tsc = 0;  // records stamped before it are from an earlier session
    uint64_t (*clock)() = nullptr;   // the boot clock (clock=), read after the ring's head: a
                                     // record stamped after it is scribbled
    bool may_wait = false;      // no-drop-stall and the caller can wait: stop at the first record
                                // with no free buffer, leaving it in the ring (writer->must_wait)
};

// Something for user_ring_take to do.
inline bool user_ring_pending(const UserRingCursor& c) {
    return c.ring != nullptr && (__atomic_load_n(&c.ring->head, __ATOMIC_RELAXED) != c.tail ||
                                 __atomic_load_n(&c.ring->full, __ATOMIC_RELAXED) != c.full_seen);
}

// Takes every record the thread published (and counts its `full` events) into t.writer, as the
// protocol in spinlab/trace.h says. Returns the records taken. Call on the CPU that owns the
// writer, with the writer's events atomic there (the kernel: interrupts off).
uint32_t user_ring_take(UserRingCursor& c, const UserRingTake& t);

}  // namespace spinlab::locktrace
