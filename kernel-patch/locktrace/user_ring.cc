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

// The record as read out of the ring (its header h, read once; its payload as copied into e),
// against the session and the ring's previous record (last_tsc).
Verdict check(uint64_t last_tsc, const UserRingTake& t, uint64_t now, const TraceEventHeader& h,
              const TraceSpinlockEvent& e, uint8_t* rules) {
    if (h.size != sizeof(TraceSpinlockEvent) || h.type != uint16_t(TraceEventType::kSpinlock) || e.rules == 0 ||
        h.tsc != e.release_tsc)
        return Verdict::kReject;
    if (h.tsc > now || h.tsc < last_tsc) return Verdict::kReject;
    if (t.writer == nullptr || h.tsc < t.session_start_tsc) return Verdict::kDiscard;
    *rules = rules_enabled(e.rules, t.groups);
    return *rules != 0 ? Verdict::kWrite : Verdict::kDiscard;
}

// The records of one take written back to back into the CPU's current buffer: where the next
// goes, and the bookkeeping end_write_run stores once for all of them.
struct Run {
    uint8_t* base = nullptr;
    uint32_t fit = 0;       // records the buffer had room for when the run began
    uint32_t n = 0;         // written
    uint64_t attempts = 0;  // written or refused
    uint64_t refused = 0;
    uint64_t counted = 0;   // attempts begin_write counted already (the run's first, in a new buffer)
    uint64_t first_tsc = 0, last_tsc = 0;

    void begin(Writer& w, uint64_t already_counted) {
        base = w.cur != nullptr ? w.cur + w.used : nullptr;
        fit = room_for(w, sizeof(TraceSpinlockEvent));
        n = 0;
        attempts = refused = 0;
        counted = already_counted;
    }
    TraceSpinlockEvent* room() { return reinterpret_cast<TraceSpinlockEvent*>(base) + n; }
    void end(Writer& w) {
        end_write_run(w, sizeof(TraceSpinlockEvent), n, attempts - counted, refused, first_tsc, last_tsc);
        fit = n = 0;
        attempts = refused = counted = 0;
    }
};

// The thread's losses since the last take (its `full` count), counted first: they happened
// before the records it could write after them are taken, and they are attempts of this CPU's
// session (or outside it). A thread cannot lose more events than it had time to attempt.
[[gnu::always_inline]] inline void count_thread_losses(UserRingCursor& c, const UserRingTake& t, uint64_t full,
                                                       uint64_t now) {
    if (full == c.full_seen) return;
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

// A first look at what tells this session's event from none: true for a record of an earlier
// session, or with rules this session does not enable. The thread may change the record
// meanwhile, so what is written is checked again, in full, as read.
[[gnu::always_inline]] inline bool not_this_sessions(const TraceSpinlockEvent& src, uint64_t last_tsc, uint64_t now,
                                                     const UserRingTake& t) {
    const uint8_t peek_rules = __atomic_load_n(&src.rules, __ATOMIC_RELAXED);
    const uint64_t peek_tsc = __atomic_load_n(&src.h.tsc, __ATOMIC_RELAXED);
    return peek_rules != 0 && peek_tsc >= last_tsc && peek_tsc <= now &&
           (peek_tsc < t.session_start_tsc || rules_enabled(peek_rules, t.groups) == 0);
}

enum class Room { kReady, kLost, kWait };

// The run's buffer is full (or there is none): ends the run, and begin_write finds a buffer to
// begin the next in (kLost: none free, the record counted lost; kWait: wait for one).
[[gnu::always_inline]] inline Room next_buffer(Run& run, Writer& w, bool may_wait, uint64_t& latest) {
    run.end(w);
    if (begin_write(w, sizeof(TraceSpinlockEvent), may_wait) == nullptr) return w.must_wait ? Room::kWait : Room::kLost;
    run.begin(w, 1);  // this record's attempt is counted
    latest = w.latest_tsc;
    return Room::kReady;
}

// Reads the thread's record once, straight into the CPU's buffer at e, to be checked there: the
// ring is the thread's to change at any time, the room is not. The header is the kernel's, so
// only the fields checked are read from the thread's: returned, not copied.
[[gnu::always_inline]] inline TraceEventHeader read_record(const TraceSpinlockEvent& src, TraceSpinlockEvent& e) {
    uint64_t words[sizeof(TraceEventHeader) / 8];
    for (size_t i = 0; i < sizeof words / 8; i++)
        words[i] = __atomic_load_n(reinterpret_cast<const uint64_t*>(&src.h) + i, __ATOMIC_RELAXED);
    TraceEventHeader h;
    __builtin_memcpy(&h, words, sizeof h);
    __builtin_memcpy(reinterpret_cast<uint8_t*>(&e) + sizeof h, reinterpret_cast<const uint8_t*>(&src) + sizeof h,
                     sizeof e - sizeof h);
    return h;
}

// Makes the checked record e the CPU's: the kernel's header and the rules this session enables.
// Returns its stamp, which keeps the CPU's stream in time order: the release, unless the CPU
// wrote a later event (`latest`) first (an interrupt between a lock's release and its record's
// write); release_tsc keeps the release.
[[gnu::always_inline]] inline uint64_t own_record(TraceSpinlockEvent& e, uint8_t rules, uint64_t latest,
                                                  const UserRingTake& t) {
    const uint64_t stamp = e.release_tsc > latest ? e.release_tsc : latest;
    TraceEventHeader mine;
    fill_header(mine, sizeof e, TraceEventType::kSpinlock, t.cpu, t.thread_id, t.process_id, stamp);
    __builtin_memcpy(&e.h, &mine, sizeof mine);
    if (e.rules != rules) e.rules = rules;
    return stamp;
}

// Copies the ring's records from the cursor's tail to head into the CPU's session; returns how
// many it took. What changes per record is kept in locals and stored once, at the end of the
// take or of a buffer (end_write_run). Per record written: its payload copied, the kernel's
// header written, and its rules only when the session enables fewer than it claims. (Against a
// begin_write/end_write pair and a whole-record copy per record: a TCG ring event 428 -> 365
// cycles, of which the take 187; under the build machines' nested KVM no change, 285 k, so
// the take's cost there is not its stores; docs/trace-cost.md.)
[[gnu::always_inline]] inline uint32_t take_records(UserRingCursor& c, const UserRingTake& t, uint64_t head,
                                                    uint64_t now) {
    const TraceSpinlockEvent* records = user_ring_records(c.ring);
    const uint64_t mask = c.capacity - 1;
    Writer* const w = t.writer;
    uint64_t tail = c.tail, last_tsc = c.last_tsc, latest = w != nullptr ? w->latest_tsc : 0;
    uint64_t written = 0, lost = 0, rejected = 0, discarded = 0;
    uint32_t taken = 0;
    Run run;
    if (w != nullptr) run.begin(*w, 0);
    for (; tail != head; tail++, taken++) {
        const TraceSpinlockEvent& src = records[tail & mask];
        // No session on this CPU (nothing to check or count), or not this session's event.
        if (w == nullptr || not_this_sessions(src, last_tsc, now, t)) {
            discarded++;
            continue;
        }
        if (run.n == run.fit) {
            const Room room = next_buffer(run, *w, t.may_wait, latest);
            if (room == Room::kWait) {
                c.must_wait = true;
                break;  // this record and the rest stay for the next take
            }
            if (room == Room::kLost) {
                lost++;  // no free buffer: begin_write counted it lost
                continue;
            }
        }
        TraceSpinlockEvent& e = *run.room();
        const TraceEventHeader h = read_record(src, e);
        run.attempts++;
        uint8_t rules = 0;
        if (check(last_tsc, t, now, h, e, &rules) != Verdict::kWrite) {
            // Refused (or changed since the first look): an attempt lost; the room is reused.
            run.refused++;
            rejected++;
            lost++;
            continue;
        }
        last_tsc = h.tsc;
        const uint64_t stamp = own_record(e, rules, latest, t);
        if (run.n == 0) run.first_tsc = stamp;
        run.last_tsc = latest = stamp;
        run.n++;
        written++;
    }
    if (w != nullptr) run.end(*w);
    c.tail = tail;
    c.last_tsc = last_tsc;
    c.written += written;
    c.lost += lost;
    c.rejected += rejected;
    c.discarded += discarded;
    return taken;
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
    count_thread_losses(c, t, full, now);
    c.last_take = now;
    if (head - c.tail > c.capacity) {
        // More records than the ring holds: the thread scribbled its head. Its backlog cannot
        // be told from garbage; it goes, counted once.
        c.rejected++;
        c.tail = head;
        publish_counts(c);
        return 0;
    }
    const uint32_t taken = take_records(c, t, head, now);
    publish_counts(c);
    return taken;
}

}  // namespace spinlab::locktrace
