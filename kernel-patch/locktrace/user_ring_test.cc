// locktrace/user_ring_test.cc: the user-mode logger's ring: a thread's records reach its CPU's
// stream with the kernel's header, in order, and every event is written, counted lost or
// discarded; a full ring, no session, an earlier session's records, rules the session does
// not enable, no free buffer (real-time and no-drop-stall), and a ring scribbled on (alone and
// by a concurrent thread) never put an unchecked record into the stream.
#include "user_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "buffer_parser.h"
#include "drain.h"
#include "test_area.h"

namespace spinlab::locktrace {
namespace {

using testing::make_area;

constexpr uint32_t kCpu = 0, kTid = 41, kPid = 7;
constexpr uint64_t kSessionStart = 1000;

// The boot clock of the tests: far after every stamp they write, unless a test moves it.
std::atomic<uint64_t> g_now{1ull << 40};
uint64_t test_clock() { return g_now.load(); }

struct Ring {
    std::unique_ptr<uint8_t, decltype(&std::free)> mem{nullptr, &std::free};
    UserRingCursor cursor;  // the kernel's
    UserRingWriter writer;  // the thread's
    TraceUserRing& r() { return *cursor.ring; }
};

Ring make_ring(uint32_t capacity = kTraceUserRingCapacity) {
    Ring g;
    const uint64_t bytes = (user_ring_bytes(capacity) + 4095) & ~uint64_t(4095);
    g.mem.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes)));
    std::memset(g.mem.get(), 0xA5, bytes);  // the kernel clears only the header
    user_ring_init(g.cursor, g.mem.get(), capacity);
    EXPECT_TRUE(user_ring_writer_init(g.writer, &g.r()));
    return g;
}

// One event stamped `tsc`, the lock's class carrying `value` (to follow it into the stream).
bool write_event(Ring& g, uint64_t tsc, uint32_t value, uint8_t rules = kTraceRuleContention) {
    spinlock::Lock l{};
    l.class_id = value;
    l.trace.acquire_tsc = tsc - 10;
    l.trace.contended = 1;
    l.trace.spins = 3;
    HoldFacts f = hold_facts(l, tsc);
    return user_ring_write_spinlock(g.writer, l, f, tsc, rules);
}

UserRingTake take_into(Writer* w, uint32_t groups = kTraceGroupSpinlock) {
    UserRingTake t;
    t.writer = w;
    t.groups = groups;
    t.cpu = kCpu;
    t.thread_id = kTid;
    t.process_id = kPid;
    t.session_start_tsc = kSessionStart;
    t.clock = test_clock;
    return t;
}

// Every spinlock event the host takes from CPU 0, checked as the collector checks them.
std::vector<TraceSpinlockEvent> drain_all(const testing::TestArea& a) {
    std::vector<TraceSpinlockEvent> out;
    std::vector<uint8_t> dst(a.header().session.buffer_size);
    uint32_t len = 0;
    for (;;) {
        const TakeResult r = take_buffer(a.area(), a.header(), kCpu, dst.data(), &len);
        if (r == TakeResult::kEmpty) break;
        EXPECT_EQ(r, TakeResult::kTaken);
        if (r != TakeResult::kTaken) break;
        BufferView v;
        EXPECT_EQ(parse_buffer(dst.data(), len, &v), BufferError::kNone);
        for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* p) {
            EXPECT_EQ(h.type, uint16_t(TraceEventType::kSpinlock));
            TraceSpinlockEvent e;
            std::memcpy(&e, p, sizeof e);
            out.push_back(e);
        });
    }
    return out;
}

void expect_accounting(const Writer& w) {
    EXPECT_EQ(w.ctl->events_written + w.ctl->events_lost, w.ctl->events_attempted);
}

TEST(UserRing, RecordsReachTheCpuStreamInOrderWithTheKernelsHeader) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring();
    // Three rounds across the ring's end: the thread writes, the kernel takes.
    uint32_t value = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 700; i++, value++) ASSERT_TRUE(write_event(g, kSessionStart + 100 + value, value));
        EXPECT_EQ(user_ring_take(g.cursor, take_into(&w)), 700u);
        EXPECT_FALSE(user_ring_pending(g.cursor));
    }
    flush(w, kTraceBufferFinal);
    const auto events = drain_all(a);
    ASSERT_EQ(events.size(), 2100u);
    for (uint32_t i = 0; i < events.size(); i++) {
        const TraceSpinlockEvent& e = events[i];
        EXPECT_EQ(e.class_id, i);
        EXPECT_EQ(e.h.tsc, kSessionStart + 100 + i);
        EXPECT_EQ(e.release_tsc, e.h.tsc);
        EXPECT_EQ(e.h.cpu, kCpu);
        EXPECT_EQ(e.h.thread_id, kTid);  // the kernel's, not the thread's (it wrote 0)
        EXPECT_EQ(e.h.process_id, kPid);
        EXPECT_EQ(e.rules, kTraceRuleContention);
        EXPECT_EQ(e.spin_count, 3u);
    }
    EXPECT_EQ(g.r().written, 2100u);
    EXPECT_EQ(g.r().tail, 2100u);
    EXPECT_EQ(g.r().lost + g.r().rejected + g.r().discarded, 0u);
    EXPECT_EQ(w.ctl->events_written, 2100u);
    expect_accounting(w);
}

// An interrupt between a ring-3 lock's release and its record's write: the CPU writes a later
// event before the record exists. The record's header then carries that later stamp (the CPU's
// stream stays in time order, which CTF readers require); release_tsc keeps the release.
TEST(UserRing, ARecordOlderThanTheCpusLastEventKeepsTheStreamInOrder) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring();
    void* p = begin_write(w, sizeof(TraceSyscallExitEvent));
    ASSERT_NE(p, nullptr);
    TraceSyscallExitEvent k{};
    fill_header(k.h, sizeof k, TraceEventType::kSyscallExit, kCpu, 1, 1, kSessionStart + 500);
    std::memcpy(p, &k, sizeof k);
    end_write(w, sizeof k, kSessionStart + 500);
    ASSERT_TRUE(write_event(g, kSessionStart + 400, 1));  // released at 400, written after 500
    ASSERT_TRUE(write_event(g, kSessionStart + 600, 2));
    user_ring_take(g.cursor, take_into(&w));
    flush(w, 0);
    std::vector<uint8_t> dst(4096);
    uint32_t len = 0;
    ASSERT_EQ(take_buffer(a.area(), a.header(), kCpu, dst.data(), &len), TakeResult::kTaken);
    BufferView v;
    ASSERT_EQ(parse_buffer(dst.data(), len, &v), BufferError::kNone);
    std::vector<std::pair<uint64_t, uint64_t>> stamps;  // header, release (0: not a spinlock event)
    for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
        TraceSpinlockEvent e{};
        if (h.type == uint16_t(TraceEventType::kSpinlock)) std::memcpy(&e, ev, sizeof e);
        stamps.emplace_back(h.tsc, e.release_tsc);
    });
    ASSERT_EQ(stamps.size(), 3u);
    EXPECT_EQ(stamps[1], std::make_pair(kSessionStart + 500, kSessionStart + 400));
    EXPECT_EQ(stamps[2], std::make_pair(kSessionStart + 600, kSessionStart + 600));
}

TEST(UserRing, AFullRingRefusesAndItsLostEventsAreCounted) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring(16);
    for (uint32_t i = 0; i < 16; i++) ASSERT_TRUE(write_event(g, kSessionStart + 1 + i, i));
    EXPECT_FALSE(write_event(g, kSessionStart + 20, 99));  // full: nothing written
    for (int i = 0; i < 3; i++) user_ring_note_full(g.writer);
    EXPECT_EQ(user_ring_take(g.cursor, take_into(&w)), 16u);
    EXPECT_EQ(w.ctl->events_attempted, 19u);
    EXPECT_EQ(w.ctl->events_lost, 3u);
    EXPECT_EQ(g.r().lost, 3u);
    EXPECT_EQ(g.r().written, 16u);
    ASSERT_TRUE(write_event(g, kSessionStart + 30, 16));  // room again
    user_ring_take(g.cursor, take_into(&w));
    flush(w, 0);
    EXPECT_EQ(drain_all(a).size(), 17u);
    expect_accounting(w);
}

TEST(UserRing, WithoutASessionOrItsGroupRecordsAreDiscardedNotCounted) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring();
    for (uint32_t i = 0; i < 5; i++) write_event(g, kSessionStart + 1 + i, i);
    user_ring_note_full(g.writer);
    user_ring_take(g.cursor, take_into(nullptr));  // no session on the CPU
    EXPECT_EQ(g.r().discarded, 6u);
    // The session enables long waits only: a contention sample is not its event.
    for (uint32_t i = 0; i < 4; i++) write_event(g, kSessionStart + 10 + i, i);
    write_event(g, kSessionStart + 20, 50, kTraceRuleContention | kTraceRuleLongWait);
    user_ring_take(g.cursor, take_into(&w, kTraceGroupLongWait));
    EXPECT_EQ(g.r().discarded, 10u);
    EXPECT_EQ(g.r().written, 1u);
    EXPECT_EQ(w.ctl->events_attempted, 1u);  // only the long wait was this session's attempt
    // Records stamped before the session started are an earlier session's (a thread that
    // wrote them before the CPU armed).
    Ring fresh = make_ring();
    write_event(fresh, kSessionStart - 1, 60);
    user_ring_take(fresh.cursor, take_into(&w));
    EXPECT_EQ(fresh.r().discarded, 1u);
    EXPECT_EQ(w.ctl->events_attempted, 1u);
    flush(w, 0);
    const auto events = drain_all(a);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].class_id, 50u);
    EXPECT_EQ(events[0].rules, kTraceRuleLongWait);  // the rule the session does not enable went
    expect_accounting(w);
}

TEST(UserRing, NoFreeBufferLosesAndCountsInRealTimeAndWaitsInNoDropStall) {
    for (TraceLoggerMode mode : {TraceLoggerMode::kRealTime, TraceLoggerMode::kNoDropStall}) {
        auto a = make_area(1, 4096, 2, mode);
        Writer w;
        writer_arm(w, a.area(), kCpu);
        Ring g = make_ring();
        const uint32_t per_buffer = (4096 - sizeof(TraceBufferHeader)) / sizeof(TraceSpinlockEvent);
        const uint32_t n = 2 * per_buffer + 5;  // two buffers' worth, and five more
        for (uint32_t i = 0; i < n; i++) ASSERT_TRUE(write_event(g, kSessionStart + 1 + i, i));
        UserRingTake t = take_into(&w);
        t.may_wait = true;
        user_ring_take(g.cursor, t);
        if (mode == TraceLoggerMode::kRealTime) {
            EXPECT_FALSE(g.cursor.must_wait);
            EXPECT_EQ(g.r().lost, 5u);
            EXPECT_EQ(w.ctl->events_lost, 5u);
            EXPECT_EQ(drain_all(a).size(), 2 * per_buffer);  // both buffers, full and queued
        } else {
            // The five stay in the ring until the host gives a buffer back.
            EXPECT_TRUE(g.cursor.must_wait);
            EXPECT_EQ(g.r().tail, 2u * per_buffer);
            EXPECT_TRUE(user_ring_pending(g.cursor));
            EXPECT_EQ(drain_all(a).size(), 2 * per_buffer);
            user_ring_take(g.cursor, t);
            EXPECT_FALSE(g.cursor.must_wait);
            EXPECT_EQ(g.r().written, n);
            EXPECT_EQ(w.ctl->events_lost, 0u);
        }
        expect_accounting(w);
    }
}

// One take of many records fills buffer after buffer, and keeps its bookkeeping in locals until a
// buffer ends (end_write_run): refused records scattered through it, at a buffer's last room
// and a new buffer's first too, leave no gap and no stale room in the stream, each record is
// counted once, rules the session does not enable are masked and the reserved byte cleared.
TEST(UserRing, ATakeAcrossBuffersWithRefusedRecordsLeavesNoGapAndCountsEachOnce) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring();
    TraceSpinlockEvent* rec = user_ring_records(&g.r());
    constexpr uint32_t kRecords = 400;
    const uint32_t per_buffer = (4096 - sizeof(TraceBufferHeader)) / sizeof(TraceSpinlockEvent);
    std::vector<bool> refused(kRecords, false);
    // Refused: every 7th, and once each the record that lands in a buffer's last room and the
    // one that lands in a new buffer's first (whose attempt begin_write counted).
    uint32_t placed = 0;
    bool last_room = false, first_room = false;
    for (uint32_t i = 0; i < kRecords; i++) {
        ASSERT_TRUE(write_event(g, kSessionStart + 100 + i, i, kTraceRuleContention | kTraceRuleLongWait));
        const uint32_t room = placed % per_buffer;
        if (i % 7 == 3 || (!last_room && room == per_buffer - 1) || (!first_room && placed > 0 && room == 0)) {
            last_room |= room == per_buffer - 1;
            first_room |= placed > 0 && room == 0;
            rec[i].h.size = 24;  // refused: the room it was copied into is reused
            refused[i] = true;
        } else {
            placed++;
        }
    }
    ASSERT_TRUE(last_room && first_room);
    rec[5].handovers = 7;  // the thread's count of the holds begun during its wait, kept
    EXPECT_EQ(user_ring_take(g.cursor, take_into(&w)), kRecords);
    // A record the thread changes after the take is not in the stream: the take read it once.
    rec[6].class_id = 999999;
    flush(w, kTraceBufferFinal);
    const auto events = drain_all(a);
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < kRecords; i++)
        if (!refused[i]) want.push_back(i);
    ASSERT_EQ(events.size(), want.size());
    for (size_t k = 0; k < events.size(); k++) {
        EXPECT_EQ(events[k].class_id, want[k]);
        EXPECT_EQ(events[k].h.tsc, kSessionStart + 100 + want[k]);
        EXPECT_EQ(events[k].h.thread_id, kTid);
        EXPECT_EQ(events[k].rules, kTraceRuleContention);  // the long-wait group is not on
        EXPECT_EQ(events[k].handovers, want[k] == 5 ? 7 : 0);
    }
    const uint64_t n_refused = kRecords - want.size();
    EXPECT_EQ(g.r().written, want.size());
    EXPECT_EQ(g.r().rejected, n_refused);
    EXPECT_EQ(w.ctl->events_written, want.size());
    EXPECT_EQ(w.ctl->events_lost, n_refused);
    EXPECT_EQ(w.ctl->events_attempted, uint64_t(kRecords));
    EXPECT_EQ(w.ctl->produced, (want.size() + per_buffer - 1) / per_buffer);  // full buffers, then the last
    expect_accounting(w);
}

TEST(UserRing, ScribbledRecordsAreRejectedAndCountedLostTheRestGoThrough) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring();
    TraceSpinlockEvent* rec = user_ring_records(&g.r());
    for (uint32_t i = 0; i < 8; i++) write_event(g, kSessionStart + 100 + i, i);
    rec[1].h.size = 24;                          // not a spinlock event's size
    rec[2].h.type = uint16_t(TraceEventType::kProfile);
    rec[3].rules = 0;                            // no rule fired
    rec[4].h.tsc = g_now.load() + 1;             // from the future
    rec[4].release_tsc = rec[4].h.tsc;
    rec[5].release_tsc = 5;                      // the header's stamp is not the release's
    rec[6].h.tsc = rec[6].release_tsc = kSessionStart + 50;  // before the ring's previous one
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(g.r().rejected, 6u);
    EXPECT_EQ(g.r().written, 2u);
    EXPECT_EQ(w.ctl->events_lost, 6u);
    // A head that leaps past the ring: the backlog is dropped, counted once; the ring goes on.
    g.r().head += 5000;
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(g.r().rejected, 7u);
    EXPECT_EQ(g.r().tail, g.r().head);
    // And a `full` that goes backwards is not a count of anything, nor one that claims more
    // losses than the time since the last take allows (one per kUserRingCyclesPerLoss cycles,
    // and a ring's worth: the clock stands still here); a plausible one is counted.
    g.r().full = ~0ull;
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(g.r().rejected, 8u);
    const uint64_t lost = w.ctl->events_lost;
    g.r().full += 1ull << 20;
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(g.r().rejected, 9u);
    EXPECT_EQ(w.ctl->events_lost, lost);
    g.r().full += 5;
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(w.ctl->events_lost, lost + 5);
    UserRingWriter again;
    ASSERT_TRUE(user_ring_writer_init(again, &g.r()));
    g.writer = again;
    ASSERT_TRUE(write_event(g, kSessionStart + 500, 77));
    user_ring_take(g.cursor, take_into(&w));
    flush(w, 0);
    const auto events = drain_all(a);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].class_id, 0u);
    EXPECT_EQ(events[1].class_id, 7u);
    EXPECT_EQ(events[2].class_id, 77u);
    expect_accounting(w);
}

TEST(UserRing, AThreadScribblingWhileTheKernelTakesPutsNothingUncheckedInTheStream) {
    auto a = make_area(1, 4096, 1024, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring(64);
    std::atomic<bool> done{false};
    // The scribbler writes random bytes over the header's thread part and the records.
    std::thread scribbler([&] {
        std::mt19937_64 rng(1);
        auto* bytes = reinterpret_cast<volatile uint8_t*>(g.mem.get());
        const uint64_t size = user_ring_bytes(64);
        while (!done.load(std::memory_order_relaxed)) {
            const uint64_t off = rng() % size;
            if (off >= 64 && off < kTraceUserRingHeaderSize) continue;  // the kernel's part: see below
            bytes[off] = uint8_t(rng());
        }
    });
    // Until the scribbler has hit records the kernel then refused (at most a few seconds).
    for (uint64_t i = 0; i < 20000 || (g.cursor.rejected < 20 && i < 50'000'000); i++) {
        write_event(g, kSessionStart + 1 + i, uint32_t(i));
        if (i % 7 == 0) user_ring_take(g.cursor, take_into(&w));
    }
    done = true;
    scribbler.join();
    user_ring_take(g.cursor, take_into(&w));
    flush(w, 0);
    const auto events = drain_all(a);  // parse_buffer accepts every buffer
    for (const auto& e : events) {
        EXPECT_EQ(e.h.thread_id, kTid);
        EXPECT_EQ(e.h.size, sizeof(TraceSpinlockEvent));
        EXPECT_NE(e.rules, 0);
        EXPECT_LE(e.h.tsc, g_now.load());
        EXPECT_GE(e.h.tsc, kSessionStart);
    }
    for (size_t i = 1; i < events.size(); i++) EXPECT_GE(events[i].h.tsc, events[i - 1].h.tsc);
    EXPECT_EQ(g.cursor.written, events.size());
    EXPECT_GT(g.cursor.rejected, 0u);
    expect_accounting(w);
}

TEST(UserRing, TheKernelsCopyOfTailIsTheOneThatCounts) {
    auto a = make_area(1, 4096, 64, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), kCpu);
    Ring g = make_ring(16);
    for (uint32_t i = 0; i < 4; i++) write_event(g, kSessionStart + 1 + i, i);
    user_ring_take(g.cursor, take_into(&w));
    g.r().tail = 0;  // the thread rewrites the kernel's part: records 0..3 are not taken again
    user_ring_take(g.cursor, take_into(&w));
    EXPECT_EQ(g.r().tail, 4u);
    EXPECT_EQ(g.cursor.written, 4u);
    // A header whose capacity the thread changed is not one its writer fills.
    g.r().capacity = 3;
    UserRingWriter other;
    EXPECT_FALSE(user_ring_writer_init(other, &g.r()));
}

}  // namespace
}  // namespace spinlab::locktrace
