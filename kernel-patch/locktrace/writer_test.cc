// locktrace/writer_test.cc: the buffer protocol: one CPU's writer against the host's drain,
// single-threaded and with a concurrent producer and consumer (wraparound, waits, losses,
// buffers growing from MinimumBuffers), with exact accounting: events written + lost ==
// attempted, per CPU.
#include "writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "buffer_parser.h"
#include "drain.h"
#include "test_area.h"

namespace spinlab::locktrace {
namespace {

using testing::make_area;

// Writes one syscall-exit event carrying `value` (as `number`); returns whether it was written.
// may_wait: a null with must_wait set (no-drop-stall) calls wait() and tries again, as the
// kernel's writers with interrupts on do.
template <class Wait>
bool write_value(Writer& w, uint64_t value, bool may_wait, Wait wait) {
    constexpr uint32_t size = sizeof(TraceSyscallExitEvent);
    void* p = begin_write(w, size, may_wait);
    for (bool waited = false; p == nullptr && w.must_wait; p = begin_write(w, size, may_wait)) {
        if (!waited) note_stall(w);
        waited = true;
        wait();
    }
    if (p == nullptr) return false;
    TraceSyscallExitEvent e;
    fill_header(e.h, size, TraceEventType::kSyscallExit, w.cpu, 1, 2, value + 1);
    e.number = value;
    e.result = ~value;
    std::memcpy(p, &e, size);
    end_write(w, size, value + 1);
    return true;
}
bool write_value(Writer& w, uint64_t value) {
    return write_value(w, value, false, [] {});
}

// The values of every event of the buffers taken from `cpu` so far.
struct Drained {
    std::vector<uint64_t> values;
    uint64_t buffers = 0;
    uint64_t bad = 0;
    uint64_t last_events_lost = 0;
};

void take_all(const testing::TestArea& a, uint32_t cpu, Drained& d) {
    std::vector<uint8_t> dst(a.header().session.buffer_size);
    uint32_t len = 0;
    for (;;) {
        TakeResult r = take_buffer(a.area(), a.header(), cpu, dst.data(), &len);
        if (r == TakeResult::kEmpty) return;
        if (r == TakeResult::kBad) {
            d.bad++;
            continue;
        }
        d.buffers++;
        BufferView v;
        ASSERT_EQ(parse_buffer(dst.data(), len, &v), BufferError::kNone);
        EXPECT_GE(v.header.events_lost, d.last_events_lost);
        d.last_events_lost = v.header.events_lost;
        for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
            TraceSyscallExitEvent e;
            ASSERT_EQ(h.type, uint16_t(TraceEventType::kSyscallExit));
            std::memcpy(&e, ev, sizeof e);
            EXPECT_EQ(e.result, ~e.number);
            d.values.push_back(e.number);
        });
    }
}

// Full buffers waiting for the host on `cpu` (the test's own area: its counters are trusted).
uint64_t queued(const testing::TestArea& a, uint32_t cpu) {
    const TraceCpuControl* c = area_control(a.area(), cpu);
    return c->produced - c->consumed;
}

void expect_accounting(const TraceCpuControl& c) {
    EXPECT_EQ(c.events_written + c.events_lost, c.events_attempted);
    EXPECT_EQ(c.buffers_written, c.produced);
}

constexpr uint32_t kPerBuffer = (4096 - sizeof(TraceBufferHeader)) / sizeof(TraceSyscallExitEvent);

TEST(Writer, FillsBuffersInOrderAndTheHostTakesThem) {
    auto a = make_area(1, 4096, 4, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);
    for (uint64_t i = 0; i < 3 * kPerBuffer + 5; i++) ASSERT_TRUE(write_value(w, i));
    EXPECT_EQ(queued(a, 0), 3u);
    EXPECT_TRUE(flush(w, kTraceBufferFinal));
    EXPECT_FALSE(flush(w, 0));  // nothing left to publish
    Drained d;
    take_all(a, 0, d);
    ASSERT_EQ(d.values.size(), 3 * kPerBuffer + 5);
    for (uint64_t i = 0; i < d.values.size(); i++) EXPECT_EQ(d.values[i], i);
    EXPECT_EQ(d.bad, 0u);
    const TraceCpuControl& c = *w.ctl;
    EXPECT_EQ(c.events_lost, 0u);
    EXPECT_EQ(c.consumed, 4u);
    expect_accounting(c);
}

TEST(Writer, RealTimeLosesAndCountsWhenNoBufferIsFree) {
    auto a = make_area(1, 4096, 2, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);
    // Two buffers: the first fills and is queued, the second fills and is queued, then loss.
    uint64_t written = 0;
    for (uint64_t i = 0; i < 2 * kPerBuffer + 10; i++) written += write_value(w, i);
    EXPECT_EQ(written, 2 * kPerBuffer);
    EXPECT_EQ(w.ctl->events_lost, 10u);
    expect_accounting(*w.ctl);
    // The host gives one back: writing resumes, and the buffer after the gap says how many
    // were lost before it.
    Drained d;
    std::vector<uint8_t> dst(4096);
    uint32_t len;
    ASSERT_EQ(take_buffer(a.area(), a.header(), 0, dst.data(), &len), TakeResult::kTaken);
    ASSERT_TRUE(write_value(w, 1000));
    flush(w, 0);
    take_all(a, 0, d);
    EXPECT_EQ(d.last_events_lost, 10u);
    EXPECT_EQ(d.values.back(), 1000u);
    expect_accounting(*w.ctl);
}

TEST(Writer, CircularKeepsTheNewestBuffers) {
    auto a = make_area(1, 4096, 4, TraceLoggerMode::kCircular);
    Writer w;
    writer_arm(w, a.area(), 0);
    const uint64_t total = 10 * kPerBuffer + 3;
    for (uint64_t i = 0; i < total; i++) ASSERT_TRUE(write_value(w, i));
    flush(w, kTraceBufferFinal);
    EXPECT_EQ(w.ctl->events_lost, 0u);
    EXPECT_EQ(w.ctl->produced, 11u);
    EXPECT_EQ(w.ctl->log_buffers_lost, 11u - 4u);
    std::vector<uint64_t> got;
    std::vector<uint8_t> dst(4096);
    const uint64_t torn = read_in_place(
        a.area(), a.header(), 0, dst.data(),
        [](void* arg, const uint8_t* data, uint32_t len) {
            BufferView v;
            ASSERT_EQ(parse_buffer(data, len, &v), BufferError::kNone);
            for_each_event(v, [&](const TraceEventHeader&, const uint8_t* ev) {
                TraceSyscallExitEvent e;
                std::memcpy(&e, ev, sizeof e);
                static_cast<std::vector<uint64_t>*>(arg)->push_back(e.number);
            });
        },
        &got);
    EXPECT_EQ(torn, 0u);
    // The 4 newest buffers: 3 full ones and the final partial one, in order, ending at the last.
    ASSERT_EQ(got.size(), 3 * kPerBuffer + 3);
    for (uint64_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], total - got.size() + i);
    expect_accounting(*w.ctl);
}

TEST(Writer, NoDropStallWaitsOnlyWhenTheCallerMay) {
    auto a = make_area(1, 4096, 2, TraceLoggerMode::kNoDropStall);
    Writer w;
    writer_arm(w, a.area(), 0);
    Drained d;
    int waits = 0;
    auto host_drains = [&] {
        waits++;
        take_all(a, 0, d);  // the "host" drains while we wait
    };
    for (uint64_t i = 0; i < 2 * kPerBuffer; i++) ASSERT_TRUE(write_value(w, i, true, host_drains));
    EXPECT_EQ(waits, 0);
    // Both buffers are full and queued: a caller that may not wait (interrupts off) loses the
    // event, counted...
    EXPECT_FALSE(write_value(w, 99999, false, host_drains));
    EXPECT_FALSE(w.must_wait);
    EXPECT_EQ(w.ctl->events_lost, 1u);
    // ...one that may gets null with must_wait and nothing counted...
    EXPECT_EQ(begin_write(w, sizeof(TraceSyscallExitEvent), true), nullptr);
    EXPECT_TRUE(w.must_wait);
    EXPECT_EQ(w.ctl->events_lost, 1u);
    expect_accounting(*w.ctl);
    // ...and waits for the host, losing nothing.
    ASSERT_TRUE(write_value(w, 2 * kPerBuffer, true, host_drains));
    EXPECT_EQ(waits, 1);
    EXPECT_EQ(w.ctl->stalls, 1u);
    flush(w, 0);
    take_all(a, 0, d);
    ASSERT_EQ(d.values.size(), 2 * kPerBuffer + 1);
    for (uint64_t i = 0; i < d.values.size(); i++) EXPECT_EQ(d.values[i], i);
    expect_accounting(*w.ctl);
}

// Real time with MinimumBuffers 2 of MaximumBuffers 5: a slot is added only when every allocated
// one is queued, one per buffer, up to 5; only allocated slots are written; once the host takes
// them back the buffers rotate through the same 5 slots, in order.
TEST(Writer, BuffersGrowOnDemandAndRotateThroughTheAllocatedSlots) {
    auto a = make_area(1, 4096, 5, TraceLoggerMode::kRealTime, 7, 2);
    Writer w;
    writer_arm(w, a.area(), 0);
    EXPECT_EQ(w.ctl->buffers_allocated, 2u);
    uint64_t v = 0;
    for (; v < 2 * kPerBuffer; v++) ASSERT_TRUE(write_value(w, v));
    EXPECT_EQ(w.ctl->buffers_allocated, 2u);  // two full, nothing needed a third yet
    ASSERT_TRUE(write_value(w, v++));
    EXPECT_EQ(w.ctl->buffers_allocated, 3u);
    // The host takes buffer 0 back: the next buffer reuses a slot instead of growing.
    Drained d;
    std::vector<uint8_t> dst(4096);
    uint32_t len;
    ASSERT_EQ(take_buffer(a.area(), a.header(), 0, dst.data(), &len), TakeResult::kTaken);
    for (; v < 4 * kPerBuffer; v++) ASSERT_TRUE(write_value(w, v));
    EXPECT_EQ(w.ctl->buffers_allocated, 3u);
    // Nobody drains: it grows to 5 and then loses.
    uint64_t written = 0;
    for (uint64_t i = 0; i < 4 * kPerBuffer; i++) written += write_value(w, v++);
    EXPECT_EQ(w.ctl->buffers_allocated, 5u);
    EXPECT_GT(w.ctl->events_lost, 0u);
    const uint32_t* slots = area_slots(a.area(), 0);
    for (uint64_t s = 0; s < w.ctl->produced; s++) EXPECT_LT(slots[s % 5], 5u);
    // Drain and write 20 more buffers, drained as they come: the slots rotate, nothing is lost.
    take_all(a, 0, d);
    const uint64_t lost = w.ctl->events_lost;
    for (uint64_t i = 0; i < 20 * kPerBuffer; i++) {
        ASSERT_TRUE(write_value(w, v++));
        if (i % kPerBuffer == 0) take_all(a, 0, d);
    }
    flush(w, 0);
    take_all(a, 0, d);
    EXPECT_EQ(w.ctl->buffers_allocated, 5u);
    EXPECT_EQ(w.ctl->events_lost, lost);
    EXPECT_EQ(d.bad, 0u);
    EXPECT_EQ(d.values.size() + kPerBuffer, w.ctl->events_written);  // buffer 0 was taken above
    for (size_t i = 1; i < d.values.size(); i++) ASSERT_LT(d.values[i - 1], d.values[i]) << i;
    expect_accounting(*w.ctl);
}

TEST(Writer, CircularGrowsBeforeItOverwrites) {
    auto a = make_area(1, 4096, 4, TraceLoggerMode::kCircular, 7, 2);
    Writer w;
    writer_arm(w, a.area(), 0);
    for (uint64_t i = 0; i < 4 * kPerBuffer; i++) ASSERT_TRUE(write_value(w, i));
    EXPECT_EQ(w.ctl->buffers_allocated, 4u);
    EXPECT_EQ(w.ctl->log_buffers_lost, 0u);  // grew into all 4 before overwriting one
    for (uint64_t i = 0; i < 2 * kPerBuffer; i++) ASSERT_TRUE(write_value(w, 4 * kPerBuffer + i));
    EXPECT_EQ(w.ctl->log_buffers_lost, 2u);
    EXPECT_EQ(w.ctl->buffers_allocated, 4u);
}

TEST(Writer, OversizedEventIsLostAndCounted) {
    auto a = make_area(1, 4096, 2, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);
    EXPECT_EQ(begin_write(w, 4096), nullptr);
    EXPECT_EQ(begin_write(w, 8), nullptr);
    EXPECT_EQ(w.ctl->events_lost, 2u);
    expect_accounting(*w.ctl);
}

TEST(Writer, FlushTimerPublishesOnlyOldPartialBuffers) {
    auto a = make_area(1, 4096, 4, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);
    EXPECT_FALSE(flush_if_older(w, 1'000'000, 10));  // nothing written yet
    ASSERT_TRUE(write_value(w, 100));                 // tsc 101
    EXPECT_FALSE(flush_if_older(w, 110, 10));
    EXPECT_TRUE(flush_if_older(w, 111, 10));
    EXPECT_EQ(queued(a, 0), 1u);
    std::vector<uint8_t> dst(4096);
    uint32_t len;
    ASSERT_EQ(take_buffer(a.area(), a.header(), 0, dst.data(), &len), TakeResult::kTaken);
    BufferView v;
    ASSERT_EQ(parse_buffer(dst.data(), len, &v), BufferError::kNone);
    EXPECT_EQ(v.header.flags & kTraceBufferFlushed, kTraceBufferFlushed);
    EXPECT_EQ(v.header.first_tsc, 101u);
}

TEST(Drain, DamagedBufferIsCountedAsRealTimeLossAndGivenBack) {
    auto a = make_area(1, 4096, 2, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);
    ASSERT_TRUE(write_value(w, 1));
    flush(w, 0);
    reinterpret_cast<TraceBufferHeader*>(area_buffer(a.area(), 0, 0))->event_count = 5;
    std::vector<uint8_t> dst(4096);
    uint32_t len;
    EXPECT_EQ(take_buffer(a.area(), a.header(), 0, dst.data(), &len), TakeResult::kBad);
    EXPECT_EQ(w.ctl->realtime_buffers_lost, 1u);
    EXPECT_EQ(w.ctl->consumed, 1u);
    EXPECT_EQ(take_buffer(a.area(), a.header(), 0, dst.data(), &len), TakeResult::kEmpty);
}

// A producer thread per CPU against one consumer thread: many wraparounds of few small
// buffers; every event the writer counts as written arrives exactly once, in order.
void concurrent_run(TraceLoggerMode mode, uint64_t per_cpu, bool slow_consumer) {
    constexpr uint32_t kCpus = 2;
    auto a = make_area(kCpus, 4096, 4, mode, 7, 2);  // 2 buffers, growing to 4 on demand
    std::atomic<int> running{kCpus};
    std::vector<Writer> writers(kCpus);
    std::vector<std::thread> producers;
    for (uint32_t c = 0; c < kCpus; c++) {
        writer_arm(writers[c], a.area(), c);
        producers.emplace_back([&, c] {
            // At least per_cpu events, and until the 4 slots wrapped around many times
            // (however the threads are scheduled on a loaded machine); in real time against
            // the slow consumer also until the writer dropped one (up to 100 x per_cpu).
            const bool must_lose = mode == TraceLoggerMode::kRealTime && slow_consumer;
            for (uint64_t i = 0; i < per_cpu || writers[c].ctl->produced < 20 ||
                                 (must_lose && writers[c].ctl->events_lost == 0 && i < 100 * per_cpu);
                 i++)
                write_value(writers[c], i, true, [] { std::this_thread::yield(); });
            flush(writers[c], kTraceBufferFinal);
            running--;
        });
    }
    std::vector<Drained> d(kCpus);
    for (;;) {
        const bool last = running.load() == 0;
        for (uint32_t c = 0; c < kCpus; c++) take_all(a, c, d[c]);
        if (last) break;
        if (slow_consumer) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (auto& t : producers) t.join();
    for (uint32_t c = 0; c < kCpus; c++) {
        const TraceCpuControl& k = *writers[c].ctl;
        SCOPED_TRACE("cpu " + std::to_string(c));
        expect_accounting(k);
        EXPECT_GE(k.events_attempted, per_cpu);
        EXPECT_EQ(d[c].bad, 0u);
        EXPECT_EQ(d[c].values.size(), k.events_written);
        EXPECT_EQ(k.consumed, k.produced);
        EXPECT_GE(k.produced, 20u);
        EXPECT_GE(k.buffers_allocated, 2u);
        EXPECT_LE(k.buffers_allocated, 4u);
        for (size_t i = 1; i < d[c].values.size(); i++)
            ASSERT_LT(d[c].values[i - 1], d[c].values[i]) << "order at " << i;
        // Real time never waits for the consumer: a slow one loses events, and the values
        // that arrive have gaps exactly where the lost ones were (order is checked above).
        if (mode == TraceLoggerMode::kRealTime && slow_consumer) {
            EXPECT_GT(k.events_lost, 0u);
            EXPECT_EQ(k.stalls, 0u);
        }
        if (mode == TraceLoggerMode::kNoDropStall) {
            EXPECT_EQ(k.events_lost, 0u);
            for (size_t i = 0; i < d[c].values.size(); i++) ASSERT_EQ(d[c].values[i], i);
        }
    }
}

// The control words and the slot table lie in the shared region, which the host (or whatever
// maps it) can write: whatever they hold, every event the writer gives room for lies inside the
// CPU's reserved buffers, and every attempt is still counted written or lost. With the slot
// check in pick_slot removed, a scribbled slot table entry moves the room outside (and the
// guest's kernel then wrote to an unmapped address: the hostile-region test's guest panicked).
TEST(Writer, ScribbledControlWordsNeverMoveAWriteOutsideTheCpusBuffers) {
    constexpr uint64_t kValues[] = {0, 1, 3, 4, 5, 1u << 20, uint64_t(1) << 32, uint64_t(1) << 63,
                                    ~uint64_t{0}, 0x7b1ab66d7058};
    for (TraceLoggerMode mode : {TraceLoggerMode::kRealTime, TraceLoggerMode::kCircular}) {
        auto a = make_area(1, 4096, 4, mode, 7, 2);
        Writer w;
        writer_arm(w, a.area(), 0);
        const uint8_t* lo = static_cast<const uint8_t*>(area_buffer(a.area(), 0, 0));
        const uint8_t* hi = lo + uint64_t(w.nbuf) * w.buffer_size;
        TraceCpuControl& c = *w.ctl;
        uint64_t* words[] = {&c.produced, &c.overwritten, &c.buffers_allocated, &c.consumed};
        uint64_t rng = 12345;
        for (int round = 0; round < 4000; round++) {
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            const uint64_t v = kValues[(rng >> 33) % std::size(kValues)];
            if ((rng >> 20) & 1)
                *words[(rng >> 40) % std::size(words)] = v;
            else
                w.slots[(rng >> 40) % w.nbuf] = uint32_t(v);
            for (int i = 0; i < int(kPerBuffer) + 3; i++) {  // past a buffer's end: a new slot
                constexpr uint32_t size = sizeof(TraceSyscallExitEvent);
                const uint64_t attempted = c.events_attempted, lost = c.events_lost;
                uint8_t* room = static_cast<uint8_t*>(begin_write(w, size));
                if (room == nullptr) {
                    ASSERT_EQ(c.events_lost, lost + 1) << "a refused write is a counted loss";
                    continue;
                }
                ASSERT_TRUE(room >= lo && room + size <= hi)
                    << "round " << round << ": room at " << static_cast<void*>(room)
                    << " outside the CPU's buffers " << static_cast<const void*>(lo) << ".."
                    << static_cast<const void*>(hi);
                std::memset(room, 0xab, size);
                end_write(w, size, 1);
                ASSERT_EQ(c.events_attempted, attempted + 1);
            }
        }
    }
}

TEST(WriterConcurrent, RealTimeAccountsExactlyUnderAFastConsumer) {
    concurrent_run(TraceLoggerMode::kRealTime, 200000, false);
}

TEST(WriterConcurrent, RealTimeLosesUnderASlowConsumerAndAccountsExactly) {
    concurrent_run(TraceLoggerMode::kRealTime, 200000, true);
}

TEST(WriterConcurrent, NoDropStallLosesNothingUnderASlowConsumer) {
    concurrent_run(TraceLoggerMode::kNoDropStall, 50000, true);
}

}  // namespace
}  // namespace spinlab::locktrace
