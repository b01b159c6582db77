// experiments/runner/trace_results_test.cc: a repetition's trace, from the guest's writer to the
// results: a region file with a trace session in it, events written with the kernel's writer
// code, drained by the collector's TraceRecorder into a trace file, read back by
// read_trace_file: every long-wait event becomes one long wait with both holder CPUs, other
// events do not, and the loss counters are the CPUs' exactly.
#include "trace_results.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "channel/region_header.h"
#include "locktrace/session.h"
#include "locktrace/writer.h"
#include "trace_recorder.h"

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
    EXPECT_EQ(a.class_name, "user0");
    EXPECT_EQ(a.start_tsc, 3'000'000u);  // acquired at 5 M after waiting 2 M
    EXPECT_EQ(a.wait_cycles, 2'000'000u);
    EXPECT_EQ(a.holder_cpu, std::optional<uint32_t>(1));
    EXPECT_EQ(a.holder_end_cpu, std::optional<uint32_t>(1));
    EXPECT_EQ(a.lhp_class, uint32_t(LhpClass::kHolderPreempted));
    const LongWaitEntry& b = lw.entries[1];
    EXPECT_EQ(b.cpu, 1u);
    EXPECT_EQ(b.class_name, "sched");
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

}  // namespace
}  // namespace spinlab::run
