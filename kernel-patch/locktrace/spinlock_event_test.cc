// locktrace/spinlock_event_test.cc: the kernel's lock code (spinlock/ + lockstat/, full level)
// with the trace hook, on host threads playing CPUs: with SpinLockSpinThreshold = 1 and
// SpinLockContentionSampleRate = 1 the contended spinlock events equal the counters' contended
// count exactly, and every event's fields are those of its acquisition.
#include "spinlock_event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "../lockstat/instrumented_lock.h"
#include "../lockstat/perf_record.h"
#include "../lockstat/instrumented_host_env.h"
#include "buffer_parser.h"
#include "drain.h"
#include "test_area.h"

namespace spinlab::locktrace {
namespace {

using lockstat::SpinlockParams;
constexpr auto kFull = InstrumentLevel::kFull;

struct Cpu {
    lockstat::InstrumentedHostEnv<> env;
    std::unique_ptr<CpuPerfData> perf = std::make_unique<CpuPerfData>();
    Writer writer;
    SampleCountdowns countdowns{};
    ReleaseContext rc{};
};

void on_release(void* arg, const spinlock::Lock& l, uint64_t tsc) {
    trace_spinlock_release(static_cast<Cpu*>(arg)->rc, l, tsc);
}

TEST(SpinlockEvents, ContendedEventsEqualTheCountersExactly) {
    for (LockAlgorithm algo : {LockAlgorithm::kTestAndSet, LockAlgorithm::kTicket,
                               LockAlgorithm::kQueued, LockAlgorithm::kParavirt}) {
        SCOPED_TRACE(lock_algorithm_name(algo));
        constexpr uint32_t kCpus = 2;
        constexpr int kIters = 5000;
        auto area = testing::make_area(kCpus, 64 * 1024, 64, TraceLoggerMode::kRealTime);
        SpinlockParams params{1, 1000, 1, 1000000};
        std::vector<Cpu> cpus(kCpus);
        for (uint32_t c = 0; c < kCpus; c++) {
            Cpu& k = cpus[c];
            lockstat::init_cpu_perf(*k.perf, c, 1000);
            k.env.algo = algo;
            k.env.cpu_id = c;
            k.env.yield_every = 256;
            k.env.perf_data = k.perf.get();
            k.env.live_params = &params;
            writer_arm(k.writer, area.area(), c);
            k.rc = {&k.writer, &k.countdowns, &params, kTraceGroupSpinlock, 1ull << 40, c + 1, 0};
            k.env.trace_fn = on_release;
            k.env.trace_arg = &k;
        }
        spinlock::Lock lock;
        spinlock::lock_init(lock, "test", 3);
        uint64_t events = 0, sampled_uncontended = 0;
        std::vector<uint8_t> dst(64 * 1024);
        // The host's side, as spinlab-collect drains: takes each full buffer while the CPUs
        // write. Without it the 64 buffers per CPU fill on a loaded machine, where the threads
        // run up to 20 s (2 x ~60,000 sampled events there), and events are lost.
        auto drain_all = [&] {
            for (uint32_t c = 0; c < kCpus; c++) {
                uint32_t len;
                while (take_buffer(area.area(), area.header(), c, dst.data(), &len) == TakeResult::kTaken) {
                    BufferView v;
                    ASSERT_EQ(parse_buffer(dst.data(), len, &v), BufferError::kNone);
                    for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* p) {
                        TraceSpinlockEvent e;
                        std::memcpy(&e, p, sizeof e);
                        ASSERT_EQ(h.type, uint16_t(TraceEventType::kSpinlock));
                        EXPECT_EQ(e.lock_address, uint64_t(&lock));
                        EXPECT_EQ(e.call_site, 0x1234u);
                        EXPECT_EQ(e.class_id, 3u);
                        EXPECT_EQ(h.thread_id, c + 1);
                        EXPECT_LE(e.acquire_tsc, e.release_tsc);
                        if (e.flags & kTraceSpinContended) {
                            events++;
                            EXPECT_EQ(e.rules & kTraceRuleContention, kTraceRuleContention);
                            EXPECT_GE(e.spin_count, 1u);
                            // The lock came from the other CPU (it is the only other one).
                            EXPECT_EQ(e.holder_cpu_end, 1 - c);
                            // The holds begun during the wait are counted (how many depends on
                            // the race: the other CPU may take the lock again between this one's
                            // failed try and its place in the queue; the count's exactness is
                            // lockstat's HoldsBegunDuringAWaitAreCounted).
                            EXPECT_TRUE(e.flags & kTraceSpinHandoversCounted);
                            // one thread per CPU and one lock: its own CPU took none meanwhile
                            EXPECT_TRUE(e.flags & kTraceSpinWaiterCpuTookNone);
                            EXPECT_EQ(e.lhp_class, uint8_t(LhpClass::kUnknown));  // no steal time
                        } else if (e.rules & kTraceRuleAcquireSample) {
                            sampled_uncontended++;
                            EXPECT_FALSE(e.flags & (kTraceSpinHandoversCounted | kTraceSpinWaiterCpuTookNone));
                            EXPECT_EQ(e.handovers, 0);
                            EXPECT_EQ(e.spin_count, 0u);
                        } else {
                            // A hold the host's scheduler stretched (the holder's thread was
                            // preempted): rule (c).
                            EXPECT_EQ(e.rules, kTraceRuleHold);
                            EXPECT_GE(e.release_tsc - e.acquire_tsc, 1000000u);
                        }
                    });
                }
            }
        };
        std::atomic<int> ready{0};
        std::atomic<bool> done{false};
        std::thread drainer([&] {
            while (!done.load()) {
                drain_all();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
        std::vector<std::thread> threads;
        std::atomic<uint32_t> satisfied{0};  // threads past kIters with 20 contended waits
        for (uint32_t c = 0; c < kCpus; c++)
            threads.emplace_back([&, c] {
                spinlock::McsNode node{};
                ready++;
                while (ready.load() < int(kCpus)) {}
                // At least kIters, and on until each thread waited 20 times (on a loaded machine
                // the threads may take turns on one host CPU and rarely overlap), at most 20 s.
                // A thread that has its waits goes on while the other still needs its own: alone,
                // the other could never wait again (it did, for 20 s, beside a busy loop).
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                const LockClassPerf& mine = cpus[c].perf->classes[3];
                bool counted = false;
                for (int i = 0;; i++) {
                    if (!counted && i >= kIters && mine.acquisitions - mine.uncontended >= 20) {
                        counted = true;
                        satisfied++;
                    }
                    if ((counted && satisfied.load() == kCpus) || std::chrono::steady_clock::now() >= until) break;
                    lockstat::lock_acquire<kFull>(lock, &node, cpus[c].env);
                    lock.holder_site = reinterpret_cast<void*>(0x1234);
                    for (int j = 0; j < 20; j++) spinlock::cpu_pause();
                    lockstat::lock_release<kFull>(lock, cpus[c].env);
                }
                flush(cpus[c].writer, kTraceBufferFinal);
            });
        for (auto& t : threads) t.join();
        done = true;
        drainer.join();
        drain_all();  // what the last flushes published

        uint64_t contended = 0, acquisitions = 0;
        for (auto& k : cpus) {
            contended += k.perf->classes[3].acquisitions - k.perf->classes[3].uncontended;
            acquisitions += k.perf->classes[3].acquisitions;
            EXPECT_EQ(k.writer.ctl->events_lost, 0u);
        }
        EXPECT_GE(acquisitions, kCpus * kIters);
        EXPECT_EQ(events, contended);
        EXPECT_GT(contended, 0u);
        // Every 1000th uncontended acquisition, per CPU.
        uint64_t want = 0;
        for (auto& k : cpus) want += k.perf->classes[3].uncontended / 1000;
        EXPECT_EQ(sampled_uncontended, want);
    }
}

TEST(SpinlockEvents, NoSessionNoEventsAndTheCountersAreUnchanged) {
    SpinlockParams params{1, 1000, 1, 1000000};
    Cpu k;
    lockstat::init_cpu_perf(*k.perf, 0, 1000);
    k.env.perf_data = k.perf.get();
    k.env.live_params = &params;
    spinlock::Lock lock;
    spinlock::lock_init(lock, "test", 3);
    spinlock::McsNode node{};
    for (int i = 0; i < 5000; i++) {
        lockstat::lock_acquire<kFull>(lock, &node, k.env);
        lockstat::lock_release<kFull>(lock, k.env);
    }
    EXPECT_EQ(lock.trace.armed, 0);
    EXPECT_EQ(k.perf->classes[3].acquisitions, 5000u);
    EXPECT_EQ(lock.released_by, 0u);
}

}  // namespace
}  // namespace spinlab::locktrace
