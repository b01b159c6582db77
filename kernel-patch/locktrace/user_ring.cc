// locktrace/user_ring.cc: see user_ring.h and the protocol in spinlab/trace.h.
#include "user_ring.h"

namespace spinlab::locktrace {

namespace lc = lockstat;

namespace {

// What the kernel tells the thread (its copies; the cursor's are the ones that count).
void publish_counts(UserRingCursor& c) {
    TraceUserRing& r = *c.ring;
    __atomic_store_n(&r.written, c.written, __ATOMIC_RELAXED);
    __atomic_store_n(&r.lost, c.lost, __ATOMIC_RELAXED);
    __atomic_store_n(&r.rejected, c.rejected, __ATOMIC_RELAXED);
    __atomic_store_n(&r.discarded, c.discarded, __ATOMIC_RELAXED);
    __atomic_store_n(&r.takes, c.takes, __ATOMIC_RELAXED);
    __atomic_store_n(&r.capacity, c.capacity, __ATOMIC_RELAXED);
    __atomic_store_n(&r.record_size, uint32_t(sizeof(TraceSpinlockEvent)), __ATOMIC_RELAXED);
    // Release: the thread reuses the records below tail only after our copies of them.
    __atomic_store_n(&r.tail, c.tail, __ATOMIC_RELEASE);
}

// One attempt of the CPU lost (counted as begin_write counts its own losses).
void count_lost(Writer* w, uint64_t n) {
    lc::counter_add(&w->ctl->events_attempted, n);
    lc::counter_add(&w->ctl->events_lost, n);
}

enum class Verdict { kWrite, kDiscard, kReject };

// The record as copied out of the ring, against the session and the ring's previous record.
Verdict check(const UserRingCursor& c, const UserRingTake& t, uint64_t now, const TraceSpinlockEvent& e,
              uint8_t* rules) {
    if (e.h.size != sizeof(TraceSpinlockEvent) || e.h.type != uint16_t(TraceEventType::kSpinlock) ||
        e.rules == 0 || e.h.tsc != e.release_tsc)
        return Verdict::kReject;
    if (e.h.tsc > now || e.h.tsc < c.last_tsc) return Verdict::kReject;
    if (t.writer == nullptr || e.h.tsc < t.session_start_tsc) return Verdict::kDiscard;
    *rules = rules_enabled(e.rules, t.groups);
    return *rules != 0 ? Verdict::kWrite : Verdict::kDiscard;
}

}  // namespace

void user_ring_init(UserRingCursor& c, void* mem, uint32_t capacity, uint64_t now) {
    __builtin_memset(mem, 0, kTraceUserRingHeaderSize);
    c = UserRingCursor{};
    c.ring = static_cast<TraceUserRing*>(mem);
    c.capacity = capacity;
    c.last_take = now;
    publish_counts(c);
}

uint32_t user_ring_take(UserRingCursor& c, const UserRingTake& t) {
    if (c.ring == nullptr) return 0;
    TraceUserRing& r = *c.ring;
    c.takes++;
    c.must_wait = false;
    const uint64_t full = __atomic_load_n(&r.full, __ATOMIC_ACQUIRE);
    const uint64_t head = __atomic_load_n(&r.head, __ATOMIC_ACQUIRE);
    const uint64_t now = t.clock();  // after head: every record published so far is older
    // The thread's losses first: they happened before the records it could write after them
    // are taken, and they are attempts of this CPU's session (or outside it). A thread cannot
    // lose more events than it had time to attempt.
    if (full != c.full_seen) {
        const uint64_t d = full - c.full_seen;
        const uint64_t could = (now > c.last_take ? now - c.last_take : 0) / kUserRingCyclesPerLoss + c.capacity;
        c.full_seen = full;
        if (d > could) {
            c.rejected++;  // went backwards or leapt: scribbled, nothing to count
        } else if (t.writer != nullptr) {
            count_lost(t.writer, d);
            c.lost += d;
        } else {
            c.discarded += d;
        }
    }
    c.last_take = now;
    uint32_t taken = 0;
    if (head - c.tail > c.capacity) {
        // More records than the ring holds: the thread scribbled its head. Its backlog cannot
        // be told from garbage; it goes, counted once.
        c.rejected++;
        c.tail = head;
        publish_counts(c);
        return 0;
    }
    const TraceSpinlockEvent* records = user_ring_records(c.ring);
    for (; c.tail != head; c.tail++, taken++) {
        const TraceSpinlockEvent& src = records[c.tail & (c.capacity - 1)];
        if (t.writer == nullptr) {  // no session on this CPU: nothing to check or count
            c.discarded++;
            continue;
        }
        // A first look at what tells this session's event from none; the thread may change the
        // record meanwhile, so what is written is checked again, in full, once copied.
        const uint8_t peek_rules = __atomic_load_n(&src.rules, __ATOMIC_RELAXED);
        const uint64_t peek_tsc = __atomic_load_n(&src.h.tsc, __ATOMIC_RELAXED);
        if (peek_rules != 0 && peek_tsc >= c.last_tsc && peek_tsc <= now &&
            (peek_tsc < t.session_start_tsc || rules_enabled(peek_rules, t.groups) == 0)) {
            c.discarded++;  // an earlier session's, or rules this session does not enable
            continue;
        }
        void* room = begin_write(*t.writer, sizeof(TraceSpinlockEvent), t.may_wait);
        if (room == nullptr) {
            if (t.writer->must_wait) {
                c.must_wait = true;
                break;  // this record and the rest stay for the next take
            }
            c.lost++;  // no free buffer: begin_write counted it lost
            continue;
        }
        // One copy, straight into the CPU's buffer, then checked there: the ring is the
        // thread's to change at any time, the room is not.
        __builtin_memcpy(room, &src, sizeof(TraceSpinlockEvent));
        auto& e = *static_cast<TraceSpinlockEvent*>(room);
        uint8_t rules = 0;
        if (check(c, t, now, e, &rules) != Verdict::kWrite) {
            // Refused (or changed since the first look): an attempt lost; the room is reused.
            lc::counter_inc(&t.writer->ctl->events_lost);
            c.rejected++;
            c.lost++;
            continue;
        }
        c.last_tsc = e.h.tsc;
        // The header's stamp keeps the CPU's stream in time order: the release, unless the CPU
        // wrote a later event first (an interrupt between a lock's release and its record's
        // write); release_tsc keeps the release.
        const uint64_t stamp = e.release_tsc > t.writer->latest_tsc ? e.release_tsc : t.writer->latest_tsc;
        fill_header(e.h, sizeof e, TraceEventType::kSpinlock, t.cpu, t.thread_id, t.process_id, stamp);
        e.rules = rules;
        e.reserved = 0;
        end_write(*t.writer, sizeof e, stamp);
        c.written++;
    }
    publish_counts(c);
    return taken;
}

}  // namespace spinlab::locktrace
