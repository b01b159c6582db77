// experiments/runner/trace_results_test.cc: a repetition's trace, from the guest's writer to the
// results: a region file with a trace session in it, events written with the kernel's writer
// code, drained by the collector's TraceRecorder into a trace file, read back by
// read_trace_file: every long-wait event becomes one long wait with both holder CPUs, other
// events do not, and the loss counters are the CPUs' exactly. hand_over_chains places the
// hand-overs of a lock during a wait from its traced holds (a ticket queue, a missing link).
#include "trace_results.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "channel/region_header.h"
#include "locktrace/trace_session.h"
#include "locktrace/writer.h"
#include "trace/trace_recorder.h"

namespace fs = std::filesystem;

namespace spinlab::run {
namespace {

namespace lt = locktrace;

// A shared region in a file with a session laid out in its trace section, as the guest does.
class RegionFile {
public:
    RegionFile(const std::string& path, uint32_t cpus, uint32_t buffers) : path_(path) {
        const uint64_t trace = lt::trace_area_needed(4096, buffers, cpus);
        size_ = region_size_needed(cpus, trace);
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
        EXPECT_EQ(::ftruncate(fd_, off_t(size_)), 0);
        base_ = static_cast<uint8_t*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
        EXPECT_EQ(region_layout(base_, size_, cpus, 2'000'000'000, 1), RegionError::kNone);
        RegionLayout layout;
        EXPECT_EQ(region_parse(base_, size_, &layout), RegionError::kNone);
        area_ = base_ + layout.section(RegionSection::kTrace).offset;
        const uint64_t area_size = layout.section(RegionSection::kTrace).size;
        TraceSessionInformation p = lt::default_session_params();
        p.buffer_size = 4096;
        p.minimum_buffers = p.maximum_buffers = buffers;
        p.enable_flags = kTraceGroupLongWait | kTraceGroupSpinlock;
        lt::SessionPlan plan;
        EXPECT_TRUE(lt::plan_session(p, area_size, cpus, &plan));
        lt::area_start(area_, area_size, cpus, p, plan, 42, 1000);
    }
    ~RegionFile() {
        ::munmap(base_, size_);
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    void* area() const { return area_; }

private:
    std::string path_;
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    void* area_ = nullptr;
};

// One spinlock event: `rules` says which rule fired.
bool write_spin(lt::Writer& w, uint32_t cpu, uint8_t rules, uint64_t acquire, uint64_t wait,
                uint32_t holder_start, uint32_t holder_end, uint32_t class_id) {
    auto* e = static_cast<TraceSpinlockEvent*>(lt::begin_write(w, sizeof(TraceSpinlockEvent)));
    if (e == nullptr) return false;
    std::memset(e, 0, sizeof *e);
    lt::fill_header(e->h, sizeof *e, TraceEventType::kSpinlock, cpu, 5, 6, acquire + 100);
    e->acquire_tsc = acquire;
    e->release_tsc = acquire + 100;
    e->wait_cycles = wait;
    e->spin_count = wait ? 9 : 0;
    e->class_id = class_id;
    e->holder_cpu_start = holder_start;
    e->holder_cpu_end = holder_end;
    e->lhp_class = uint8_t(wait ? LhpClass::kHolderPreempted : LhpClass::kUnknown);
    e->rules = rules;
    e->flags = wait ? kTraceSpinContended : 0;
    lt::end_write(w, sizeof *e, acquire + 100);
    return true;
}

// A hold of lock `lock` on `cpu`: [acquire, release), after a wait of `wait` cycles (0:
// uncontended), handed over by `from` (kNoCpu: nobody, or not known).
TracedHold hold(uint64_t lock, uint32_t cpu, uint64_t acquire, uint64_t release, uint64_t wait,
                uint32_t start_holder, uint32_t from) {
    return {lock, 0, cpu, acquire, release, wait, start_holder, from};
}

bool write_hold(lt::Writer& w, const TracedHold& h, uint8_t rules, uint64_t holder_steal, uint64_t waiter_steal) {
    auto* e = static_cast<TraceSpinlockEvent*>(lt::begin_write(w, sizeof(TraceSpinlockEvent)));
    if (e == nullptr) return false;
    std::memset(e, 0, sizeof *e);
    lt::fill_header(e->h, sizeof *e, TraceEventType::kSpinlock, h.cpu, 5, 6, h.release_tsc);
    e->lock_address = h.lock;
    e->acquire_tsc = h.acquire_tsc;
    e->release_tsc = h.release_tsc;
    e->wait_cycles = h.wait_cycles;
    e->spin_count = h.wait_cycles ? 9 : 0;
    e->holder_steal_ns = holder_steal;
    e->waiter_steal_ns = waiter_steal;
    e->class_id = h.class_id;
    e->holder_cpu_start = h.holder_cpu_start;
    e->holder_cpu_end = h.holder_cpu_end;
    e->lhp_class = uint8_t(h.wait_cycles ? LhpClass::kNeither : LhpClass::kUnknown);
    e->rules = rules;
    e->flags = uint8_t((h.wait_cycles ? kTraceSpinContended : 0) | (h.handovers >= 0 ? kTraceSpinHandoversCounted : 0));
    e->handovers = uint8_t(h.handovers >= 0 ? h.handovers : 0);
    lt::end_write(w, sizeof *e, h.release_tsc);
    return true;
}

std::string temp(const std::string& name) {
    return ::testing::TempDir() + "trace_results_" + std::to_string(getpid()) + "_" + name;
}

collect::ClassNames names() { return {{"user0", "sched"}}; }

TEST(TraceResults, EveryLongWaitEventIsOneLongWaitWithBothHolders) {
    RegionFile region(temp("region"), 2, 4);
    const std::string file = temp("a.trace");
    collect::TraceRecorder rec(temp("region"), file);
    lt::Writer w0, w1;
    lt::writer_arm(w0, region.area(), 0);
    lt::writer_arm(w1, region.area(), 1);
    ASSERT_TRUE(write_spin(w0, 0, kTraceRuleLongWait, 5'000'000, 2'000'000, 1, 1, 0));
    ASSERT_TRUE(write_spin(w0, 0, kTraceRuleAcquireSample, 6'000'000, 0, kNoCpu, kNoCpu, 0));
    ASSERT_TRUE(write_spin(w1, 1, kTraceRuleLongWait | kTraceRuleContention, 7'000'000, 3'000'000, 0, kNoCpu, 1));
    ASSERT_TRUE(write_spin(w1, 1, kTraceRuleContention, 8'000'000, 500, 0, 0, 1));
    lt::flush(w0, kTraceBufferFinal);
    lt::flush(w1, kTraceBufferFinal);
    lt::area_stop(region.area(), 9'000'000);
    rec.drain();
    rec.finish();

    LongWaits lw;
    const TraceRecord r = read_trace_file(file, "snapshots/x-r1.trace", names(), &lw);
    EXPECT_EQ(r.file, "snapshots/x-r1.trace");
    EXPECT_EQ(r.session.session_id, 42u);
    EXPECT_EQ(r.events, 4u);
    EXPECT_EQ(r.buffers, 2u);
    EXPECT_EQ(r.damaged_frames, 0u);
    EXPECT_TRUE(r.counters_found);
    ASSERT_EQ(r.cpus.size(), 2u);
    EXPECT_EQ(r.totals.events_attempted, 4u);
    EXPECT_EQ(r.totals.events_written, 4u);
    EXPECT_EQ(r.totals.events_lost, 0u);
    EXPECT_EQ(r.totals.buffers_written, 2u);
    EXPECT_EQ(lw.dropped, 0u);
    ASSERT_EQ(lw.entries.size(), 2u);
    const LongWaitEntry& a = lw.entries[0];
    EXPECT_EQ(a.cpu, 0u);
    EXPECT_EQ(a.lock_class, "user0");
    EXPECT_EQ(a.start_tsc, 3'000'000u);  // acquired at 5 M after waiting 2 M
    EXPECT_EQ(a.wait_cycles, 2'000'000u);
    EXPECT_EQ(a.holder_cpu, std::optional<uint32_t>(1));
    EXPECT_EQ(a.holder_end_cpu, std::optional<uint32_t>(1));
    EXPECT_EQ(a.lhp_class, uint32_t(LhpClass::kHolderPreempted));
    const LongWaitEntry& b = lw.entries[1];
    EXPECT_EQ(b.cpu, 1u);
    EXPECT_EQ(b.lock_class, "sched");
    EXPECT_EQ(b.start_tsc, 4'000'000u);
    EXPECT_EQ(b.holder_cpu, std::optional<uint32_t>(0));
    EXPECT_EQ(b.holder_end_cpu, std::nullopt);
    fs::remove(file);
}

TEST(TraceResults, LostEventsAreCountedExactlyAsDroppedLongWaits) {
    // Two buffers of 4096 bytes on CPU 0 and nobody draining: the writer fills them, then every
    // further event is lost and counted.
    RegionFile region(temp("region2"), 1, 2);
    const std::string file = temp("b.trace");
    collect::TraceRecorder rec(temp("region2"), file);
    lt::Writer w;
    lt::writer_arm(w, region.area(), 0);
    uint64_t written = 0, lost = 0;
    for (uint32_t i = 0; i < 200; ++i)
        (write_spin(w, 0, kTraceRuleLongWait, 10'000'000 + i * 1000, 1'000'000, 0, 0, 0) ? written : lost)++;
    ASSERT_GT(lost, 0u);
    lt::flush(w, kTraceBufferFinal);
    lt::area_stop(region.area(), 99'000'000);
    rec.drain();
    rec.finish();
    LongWaits lw;
    const TraceRecord r = read_trace_file(file, "f", names(), &lw);
    EXPECT_EQ(r.totals.events_attempted, 200u);
    EXPECT_EQ(r.totals.events_lost, lost);
    EXPECT_EQ(r.totals.events_written + r.totals.events_lost, r.totals.events_attempted);
    EXPECT_EQ(lw.dropped, lost);
    // Everything written reached the file: listed + dropped = every long wait.
    EXPECT_EQ(lw.entries.size() + lw.dropped, 200u);
    fs::remove(file);
}

TEST(TraceResults, ACutFileKeepsItsWholeFramesAndSaysSo) {
    RegionFile region(temp("region3"), 1, 4);
    const std::string file = temp("c.trace");
    collect::TraceRecorder rec(temp("region3"), file);
    lt::Writer w;
    lt::writer_arm(w, region.area(), 0);
    ASSERT_TRUE(write_spin(w, 0, kTraceRuleLongWait, 5'000'000, 2'000'000, 0, 0, 0));
    lt::flush(w, 0);
    ASSERT_TRUE(write_spin(w, 0, kTraceRuleLongWait, 6'000'000, 2'000'000, 0, 0, 0));
    lt::flush(w, kTraceBufferFinal);
    rec.drain();
    rec.finish();
    fs::resize_file(file, fs::file_size(file) - 10);  // the counters frame cut short
    LongWaits lw;
    const TraceRecord r = read_trace_file(file, "f", names(), &lw);
    EXPECT_EQ(lw.entries.size(), 2u);
    EXPECT_FALSE(r.counters_found);
    EXPECT_EQ(r.damaged_frames, 1u);
    EXPECT_THROW(read_trace_file(temp("missing"), "f", names(), &lw), std::runtime_error);
    fs::remove(file);
}

// A ticket queue on lock 0xA: CPU 0 holds it from 100 (uncontended) and is frozen until 1000;
// CPU 1, queued since 150, takes it at 1000 and releases at 1500 to CPU 2, which has waited
// since 200. Holds of another lock (0xB) fall in between and must not be linked.
std::vector<TracedHold> queue() {
    return {hold(0xA, 0, 100, 1000, 0, kNoCpu, kNoCpu),   // 0
            hold(0xB, 1, 120, 130, 0, kNoCpu, kNoCpu),    // 1: another lock
            hold(0xA, 1, 1000, 1500, 850, 0, 0),          // 2
            hold(0xB, 0, 1200, 1300, 50, 1, 1),           // 3: another lock
            hold(0xA, 2, 1500, 1600, 1300, 0, 1)};        // 4: the wait of CPU 2, [200, 1500)
}

TEST(HandOverChains, ATicketQueueIsPlacedHoldByHold) {
    const auto chains = hand_over_chains(queue(), {4, 2});
    // CPU 2's wait: CPU 0 (its stamp 100, before the wait began; who handed it the lock is not
    // traced), then CPU 1 from 1000, when CPU 0 let go
    const std::vector<HoldLink> two{{0, 100}, {1, 1000}};
    EXPECT_EQ(chains[0], two);
    // CPU 1's own wait [150, 1000): CPU 0 throughout
    EXPECT_EQ(chains[1], (std::vector<HoldLink>{{0, 100}}));
    // the holds given in another order: the same chains
    std::vector<TracedHold> shuffled = queue();
    std::swap(shuffled[0], shuffled[4]);
    EXPECT_EQ(hand_over_chains(shuffled, {0})[0], two);
    // a late acquire stamp (CPU 1 stopped between taking the lock and reading the TSC): the
    // hand-over is still when CPU 0 let go
    std::vector<TracedHold> late = queue();
    late[2].acquire_tsc = 1400, late[2].wait_cycles = 1250;
    EXPECT_EQ(hand_over_chains(late, {4})[0], two);
}

TEST(HandOverChains, AMissingLinkIsSaidAndTheWalkStops) {
    // CPU 1's hold was not traced: CPU 2's wait names CPU 1 as the one that handed over, and the
    // hold before it is CPU 0's: CPU 1 from an unknown moment, after CPU 0 (the holder at the start)
    std::vector<TracedHold> h = queue();
    h.erase(h.begin() + 2);
    const std::vector<HoldLink> none{{0, std::nullopt}, {1, std::nullopt}};
    EXPECT_EQ(hand_over_chains(h, {3})[0], none);
    // CPU 0's hold not traced: CPU 1 from its own stamp (1000), CPU 0 before it
    h = queue();
    h.erase(h.begin());
    const std::vector<HoldLink> stamped{{0, std::nullopt}, {1, 1000}};
    EXPECT_EQ(hand_over_chains(h, {3})[0], stamped);
    // a hold by the right CPU that ended before the later hold's wait began is not the one: CPU 0
    // held 0xA [10, 50) too, and CPU 1 began to wait at 150
    h = queue();
    h[0] = hold(0xA, 0, 10, 50, 0, kNoCpu, kNoCpu);
    EXPECT_EQ(hand_over_chains(h, {4})[0], stamped);
    // a wait whose hand-over is not known at all has no chain
    h = queue();
    h[4].holder_cpu_end = kNoCpu;
    EXPECT_TRUE(hand_over_chains(h, {4})[0].empty());
}

// The pattern every uncertain long wait of a default TCG run had (results 20261207-164031, all
// 67): CPU 1 began to wait at 100 behind CPU 0, won at about 150, and was stopped before its
// stamp (1,000); CPU 0 began to wait at 160, saw CPU 1 as the holder and won after CPU 1 let go
// at 1,010. By the stamps CPU 1's hold began inside CPU 0's wait, handed over by CPU 0 itself
// (the last to let go before CPU 1's win): the chain [1, 0 at an unknown moment, 1 from 1,000],
// a hand-over through the waiter's own CPU that never was. The guest's count of the holds begun
// during CPU 0's wait (none) says CPU 1 held throughout.
TEST(HandOverChains, TheGuestsCountOfHoldsBegunOverrulesALateStamp) {
    std::vector<TracedHold> h{hold(0xA, 0, 20, 90, 0, kNoCpu, kNoCpu),   // 0: CPU 0, before both waits
                              hold(0xA, 1, 1000, 1010, 900, 0, 0),       // 1: CPU 1, stamped late
                              hold(0xA, 0, 1020, 1030, 860, 1, 1)};      // 2: CPU 0's wait [160, 1020)
    const std::vector<HoldLink> by_stamps{{1, std::nullopt}, {0, std::nullopt}, {1, 1000}};
    EXPECT_EQ(hand_over_chains(h, {2})[0], by_stamps);  // not counted (older guests): as before
    h[2].handovers = 0;
    EXPECT_EQ(hand_over_chains(h, {2})[0], (std::vector<HoldLink>{{1, std::nullopt}}));
    // counted, but holds began: the stamps' chain stands
    h[2].handovers = 2;
    EXPECT_EQ(hand_over_chains(h, {2})[0], by_stamps);
    // the event's count reaches TracedHold only under its flag (a byte that was reserved, 0)
    TraceSpinlockEvent e{};
    e.handovers = 3;
    EXPECT_EQ(traced_hold(e).handovers, -1);
    e.flags = kTraceSpinHandoversCounted;
    EXPECT_EQ(traced_hold(e).handovers, 3);
    // none counted, but the holder seen at the start is not the one that let go: not trusted
    h[2].handovers = 0, h[2].holder_cpu_start = 2;
    EXPECT_NE(hand_over_chains(h, {2})[0], (std::vector<HoldLink>{{1, std::nullopt}}));
}

// The shape of the waits still uncertain with the count: CPU 1's stamp came late and, while CPU 0
// waited, CPU 1 won and let go many times (holds begun: 40), untraced. In a 2-CPU guest whose
// waiter's CPU took no lock of the class during the wait, each of them was CPU 1's.
TEST(HandOverChains, TwoCpusAndAWaiterCpuThatTookNoneLeaveOneHolder) {
    std::vector<TracedHold> h{hold(0xA, 0, 20, 90, 0, kNoCpu, kNoCpu),   // 0: CPU 0, before both waits
                              hold(0xA, 1, 1000, 1010, 900, 0, 0),       // 1: CPU 1, stamped late
                              hold(0xA, 0, 1020, 1030, 860, 1, 1)};      // 2: CPU 0's wait [160, 1020)
    const std::vector<HoldLink> by_stamps{{1, std::nullopt}, {0, std::nullopt}, {1, 1000}};
    const std::vector<HoldLink> one{{1, std::nullopt}};
    h[2].handovers = 40;
    EXPECT_EQ(hand_over_chains(h, {2}, 2)[0], by_stamps);  // the guest did not say
    h[2].waiter_cpu_took_none = true;
    EXPECT_EQ(hand_over_chains(h, {2}, 2)[0], one);
    EXPECT_EQ(hand_over_chains(h, {2}, 3)[0], by_stamps);  // a third CPU may have held it
    EXPECT_EQ(hand_over_chains(h, {2}, 0)[0], by_stamps);  // the CPUs are not known
    h[2].holder_cpu_start = 0;  // the waiter's CPU held it at the start (another thread there)
    EXPECT_NE(hand_over_chains(h, {2}, 2)[0], one);
    h[2].holder_cpu_start = kNoCpu;  // the lock between two holders at the start
    EXPECT_EQ(hand_over_chains(h, {2}, 2)[0], one);
    // the flag reaches TracedHold only with the count
    TraceSpinlockEvent e{};
    e.flags = kTraceSpinWaiterCpuTookNone;
    EXPECT_FALSE(traced_hold(e).waiter_cpu_took_none);
    e.flags |= kTraceSpinHandoversCounted;
    EXPECT_TRUE(traced_hold(e).waiter_cpu_took_none);
}

TEST(TraceResults, LongWaitsCarryTheirPlacedHoldsAndStealTimes) {
    RegionFile region(temp("region4"), 3, 4);
    const std::string file = temp("d.trace");
    collect::TraceRecorder rec(temp("region4"), file);
    lt::Writer w[3];
    for (uint32_t c = 0; c < 3; ++c) lt::writer_arm(w[c], region.area(), c);
    // the queue's holds with the guest's times scaled up to long waits (x 10,000)
    for (TracedHold h : queue()) {
        h.acquire_tsc *= 10'000, h.release_tsc *= 10'000, h.wait_cycles *= 10'000;
        const uint8_t rules = h.wait_cycles >= 1'000'000 ? kTraceRuleLongWait : kTraceRuleAcquireSample;
        ASSERT_TRUE(write_hold(w[h.cpu], h, rules, 7 * h.cpu, 11 * h.cpu));
    }
    for (auto& x : w) lt::flush(x, kTraceBufferFinal);
    lt::area_stop(region.area(), 99'000'000);
    rec.drain();
    rec.finish();
    LongWaits lw;
    read_trace_file(file, "f", names(), &lw);
    ASSERT_EQ(lw.entries.size(), 2u);  // CPU 1's wait and CPU 2's (0xB's 50-cycle wait is not long)
    for (const LongWaitEntry& e : lw.entries) {
        if (e.cpu == 2) {
            EXPECT_EQ(e.holds, (std::vector<HoldLink>{{0, 1'000'000}, {1, 10'000'000}}));
            EXPECT_EQ(e.holder_steal_ns, std::optional<uint64_t>(14));
            EXPECT_EQ(e.waiter_steal_ns, std::optional<uint64_t>(22));
        } else {
            EXPECT_EQ(e.cpu, 1u);
            EXPECT_EQ(e.holds, (std::vector<HoldLink>{{0, 1'000'000}}));
        }
    }
    fs::remove(file);
}

}  // namespace
}  // namespace spinlab::run
