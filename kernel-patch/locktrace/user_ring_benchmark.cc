// locktrace/user_ring_benchmark.cc (target user_ring_benchmark): what a ring-3 spinlock event
// costs through the user-mode logger (user_ring.h), natively on the host, in the writing thread.
// The spinlab side of the LTTng-UST anchor (scripts/bench-lttng-anchor.sh, docs/trace-cost.md).
//
//   BM_UserRingSpinlockEvent/<drain>: per event, what a ring-3 lock's release does in the guest
//     once the sampling rules have fired (the decision itself is left out): the clock read as
//     the guest reads it (lfence; rdtsc), the hold's facts from the lock's trace fields
//     (hold_facts), the 104-byte record filled into the thread's ring (user_ring_write_spinlock:
//     reserve, header and payload, commit). When the ring is full (every 1,024 events) the thread
//     does what its system call (kTraceRingDrain) makes the kernel do: user_ring_take copies every
//     record out of the ring, checks it and writes it through the CPU's Writer into a real-time
//     trace area in host memory (make_area: 128 buffers of 64 KiB). Natively there is no ring
//     transition; a real system call (getppid) stands in for it, once per take. So the take,
//     the kernel's copy into the CPU's buffers and the buffer switches are in the per-event
//     figure, amortised over the ring's 1,024 records.
//     Full buffers are given back as the host's drain gives them back (take_buffer, then fwrite
//     to /dev/null), and that is not in the figure (it is the host's work, on another CPU, as
//     LTTng's consumer daemon's is not in LTTng's figure):
//       <drain> 1: a second thread drains while the writer runs (as the host does, and as
//          lttng-consumerd does for LTTng); the anchor's ratio uses this one.
//       <drain> 0: the writing thread drains itself between batches of 10,000 events, outside
//          the timed span (no second CPU busy; the buffers it reuses are warm in its cache).
//
// Counters (per repetition): cycles_per_event (TSC ticks per event, lfence; rdtsc around each
// batch of 10,000), ns_per_event (the same in ns, at the TSC rate measured against the
// monotonic clock), cpu_cycles_per_event and cpu_ns_per_event (the thread's on-CPU time over the
// batches, which leaves out the time other processes ran on this core), takes_per_event, and
// events_lost (records the take could not write: no free buffer; 0 unless the drain fell behind).
// A repetition fails if the events in the drained buffers are not the events written.
//   user_ring_benchmark --benchmark_out=FILE --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

#include "../lockstat/clock.h"
#include "../spinlock/lock.h"
#include "drain.h"
#include "spinlock_event.h"
#include "test_area.h"
#include "user_ring.h"
#include "writer.h"
#include "bench_clock.h"

namespace spinlab::locktrace {
namespace {

using testing::thread_cpu_ns;
using testing::tsc_hz;

using lockstat::LfenceRdtsc;

constexpr int kBatch = 10000;
constexpr uint32_t kBufferSize = 64 * 1024;
constexpr uint32_t kBuffers = 128;  // 8 MiB, as the LTTng side's channel (8 x 1 MiB)

uint64_t take_clock() { return LfenceRdtsc::now(); }

// The host's side: takes every full buffer of CPU 0 and writes it to /dev/null.
struct Drainer {
    void* area;
    TraceAreaHeader h;
    FILE* out;
    std::vector<uint8_t> dst;
    uint64_t events = 0;
    Drainer(void* a, uint64_t size) : area(a) {
        if (area_parse(area, size, &h) != nullptr) std::abort();
        out = std::fopen("/dev/null", "wb");
        dst.resize(h.session.buffer_size);
    }
    ~Drainer() { std::fclose(out); }
    // Buffers taken.
    uint32_t drain() {
        uint32_t n = 0, len = 0;
        for (;;) {
            const TakeResult r = take_buffer(area, h, 0, dst.data(), &len);
            if (r == TakeResult::kEmpty) return n;
            if (r != TakeResult::kTaken) std::abort();
            std::fwrite(dst.data(), 1, len, out);
            events += reinterpret_cast<const TraceBufferHeader*>(dst.data())->event_count;
            n++;
        }
    }
};

void BM_UserRingSpinlockEvent(benchmark::State& state) {
    const bool drain_thread = state.range(0) != 0;
    testing::TestArea a = testing::make_area(1, kBufferSize, kBuffers, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 0);

    // The thread's ring (mapped by kSysTraceRing in the guest), the kernel's cursor over it.
    const uint32_t capacity = kTraceUserRingCapacity;
    void* mem = std::aligned_alloc(4096, (user_ring_bytes(capacity) + 4095) & ~uint64_t(4095));
    UserRingCursor cursor;
    user_ring_init(cursor, mem, capacity);
    UserRingWriter uw;
    if (!user_ring_writer_init(uw, cursor.ring)) std::abort();
    UserRingTake take;
    take.writer = &w;
    take.groups = kTraceGroupSpinlock;
    take.cpu = 0;
    take.thread_id = 5;
    take.process_id = 1;
    take.session_start_tsc = a.header().session.start_tsc;
    take.clock = &take_clock;

    // A ring-3 lock whose hold was contended and is traced (its acquisition filled these).
    spinlock::Lock lock{};
    lock.holder_site = reinterpret_cast<const void*>(uintptr_t(0x401000));
    lock.class_id = 3;
    lock.trace.armed = 1;
    lock.trace.contended = 1;
    lock.trace.holder_cpu_start = 1;
    lock.trace.holder_cpu_end = 1;
    lock.trace.lhp_class = 4;

    Drainer d(a.area(), a.size);
    std::atomic<bool> stop{false};
    std::thread drainer;
    if (drain_thread) {
        drainer = std::thread([&] {
            while (!stop.load(std::memory_order_relaxed))
                if (d.drain() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        });
    }

    uint64_t cycles = 0, cpu_ns = 0, events = 0, i = 0, takes = 0;
    for (auto _ : state) {
        const uint64_t cpu0 = thread_cpu_ns();
        const uint64_t t0 = LfenceRdtsc::now();
        for (int k = 0; k < kBatch; k++, i++) {
            const uint64_t now = LfenceRdtsc::now();
            lock.trace.acquire_tsc = now - 200;
            lock.trace.spins = 1 + (i & 7);
            lock.trace.wait_cycles = i & 0xFF;
            const HoldFacts f = hold_facts(lock, now);
            if (!user_ring_write_spinlock(uw, lock, f, now, kTraceRuleContention)) [[unlikely]] {
                // The ring is full: the thread's system call, the kernel's take.
                syscall(SYS_getppid);
                user_ring_take(cursor, take);
                takes++;
                if (!user_ring_write_spinlock(uw, lock, f, now, kTraceRuleContention)) std::abort();
            }
        }
        cycles += LfenceRdtsc::now() - t0;
        cpu_ns += thread_cpu_ns() - cpu0;
        events += kBatch;
        if (!drain_thread) d.drain();
    }
    // What is left in the ring, and the last buffer (a session's stop), then every buffer.
    user_ring_take(cursor, take);
    flush(w, kTraceBufferFinal);
    if (drain_thread) {
        stop = true;
        drainer.join();
    }
    d.drain();

    const double hz = tsc_hz();
    state.counters["cycles_per_event"] = double(cycles) / double(events);
    state.counters["ns_per_event"] = double(cycles) / hz * 1e9 / double(events);
    state.counters["cpu_cycles_per_event"] = double(cpu_ns) * 1e-9 * hz / double(events);
    state.counters["cpu_ns_per_event"] = double(cpu_ns) / double(events);
    state.counters["takes_per_event"] = double(takes) / double(events);
    state.counters["events_lost"] = double(cursor.lost);
    state.counters["tsc_hz"] = hz;
    state.SetItemsProcessed(int64_t(events));
    if (cursor.rejected != 0 || cursor.discarded != 0 || cursor.written + cursor.lost != events ||
        w.ctl->events_written != cursor.written || d.events != cursor.written)
        state.SkipWithError("events miscounted");
    std::free(mem);
}
BENCHMARK(BM_UserRingSpinlockEvent)->ArgName("drain_thread")->Arg(1)->Arg(0)->UseRealTime();

}  // namespace
}  // namespace spinlab::locktrace

BENCHMARK_MAIN();
