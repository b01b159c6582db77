// collector/halt_log_test.cc: draining the guest's halt spans (halt_log.h): the ring's
// wrap-around, spans the writer overwrote before they were read, a guest that writes nonsense
// (each check names the CPU and the field), and the recorder against an in-memory region with a
// writer thread fast enough to overrun it.
#include "halt_log.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include "region_reader.h"
#include "testing/mem_region.h"

namespace spinlab {
// For the assertions (found by ADL beside the ABI's HaltSpan); this file's own.
static bool operator==(const HaltSpan& a, const HaltSpan& b) {
    return a.enter_tsc == b.enter_tsc && a.exit_tsc == b.exit_tsc;
}
static void PrintTo(const HaltSpan& s, std::ostream* o) { *o << "[" << s.enter_tsc << ", " << s.exit_tsc << "]"; }
}  // namespace spinlab

namespace spinlab::collect {
static void PrintTo(const HaltRange& r, std::ostream* o) {
    *o << "[" << r.from << ", " << (r.to ? std::to_string(*r.to) : "end") << ") of " << r.spans << " spans";
}
namespace {

using testing::MemRegion;
constexpr uint64_t K = kHaltLogSpans;

// Span n of the tests' guest: entered at 1000 + 100 n, left 50 cycles later.
HaltSpan span(uint64_t n) { return {1000 + 100 * n, 1000 + 100 * n + 50}; }

// A copy as RegionReader::halt_log makes it: `written` read as wb then wa, the spans not yet
// read (from `from` on) that the ring held at wb. A span the writer overwrote during the copy
// (n + K <= wa) holds garbage, which a drain that took it would refuse.
HaltLogCopy copy_of(uint64_t from, uint64_t wb, uint64_t wa, uint64_t halted_since = 0) {
    HaltLogCopy c;
    c.recording = 1;
    c.written_before = wb;
    c.written_after = wa;
    c.halted_since = halted_since;
    for (uint64_t n = std::max(from, wb >= K ? wb - K : 0); n < wb; ++n)
        c.spans[n % K] = n + K <= wa ? HaltSpan{9'999'999, 1} : span(n);
    return c;
}

std::vector<HaltSpan> spans(uint64_t from, uint64_t to) {
    std::vector<HaltSpan> v;
    for (uint64_t n = from; n < to; ++n) v.push_back(span(n));
    return v;
}

// A state that has read spans [0, next).
HaltReaderState read_up_to(uint64_t next) {
    HaltReaderState st;
    st.recording = true;
    st.next = next;
    st.accepted = next;
    if (next > 0) st.last_enter = span(next - 1).enter_tsc, st.last_exit = span(next - 1).exit_tsc;
    return st;
}

TEST(HaltLogDrain, ReadsEverySpanInOrderAcrossTheRingsWrapAround) {
    HaltReaderState st;
    std::vector<HaltSpan> got;
    // 300, then 400 more (slots 300..511 and 0..187), then 400 more: each read before the writer
    // came round to its slots again.
    for (uint64_t w : {300, 700, 1100, 1100, 1611}) {
        HaltDrain d = drain_halt_log(0, copy_of(st.next, w, w), &st);
        EXPECT_TRUE(d.refusal.empty()) << d.refusal;
        EXPECT_TRUE(d.lost.empty());
        got.insert(got.end(), d.spans.begin(), d.spans.end());
    }
    EXPECT_EQ(got, spans(0, 1611));
    EXPECT_EQ(st.next, 1611u);
    EXPECT_FALSE(st.lost_from);
}

TEST(HaltLogDrain, SpansTheWriterOverwroteDuringTheCopyAreOneLostRange) {
    HaltReaderState st = read_up_to(100);
    // written was 600 before the copy and 700 after it: spans 100 .. 188 (n + 512 <= 700) may
    // have been overwritten while they were copied; 189 .. 599 are whole.
    HaltDrain d = drain_halt_log(1, copy_of(100, 600, 700), &st);
    EXPECT_TRUE(d.refusal.empty()) << d.refusal;
    EXPECT_EQ(d.spans, spans(189, 600));
    ASSERT_EQ(d.lost.size(), 1u);
    // The vCPU may have halted anywhere from span 99's exit to span 189's enter.
    EXPECT_EQ(d.lost[0], (HaltRange{span(99).exit_tsc, span(189).enter_tsc, 89}));
    EXPECT_EQ(st.next, 600u);  // 600 .. 699 come with the next copy
    // And that copy reads them whole.
    HaltDrain next = drain_halt_log(1, copy_of(600, 700, 700), &st);
    EXPECT_EQ(next.spans, spans(600, 700));
    EXPECT_TRUE(next.lost.empty());
}

TEST(HaltLogDrain, AFirstReadAfterTheRingOverflowedLosesFromTheStart) {
    HaltReaderState st;
    HaltDrain d = drain_halt_log(0, copy_of(0, 2000, 2000), &st);
    EXPECT_EQ(d.spans, spans(1489, 2000));  // the writer of span 2000 may be writing 1488's slot
    ASSERT_EQ(d.lost.size(), 1u);
    EXPECT_EQ(d.lost[0], (HaltRange{0, span(1489).enter_tsc, 1489}));
    // At the boundary: 512 written, span 0's slot is the next one the writer fills.
    HaltReaderState at;
    d = drain_halt_log(0, copy_of(0, K, K), &at);
    EXPECT_EQ(d.spans, spans(1, K));
    EXPECT_EQ(d.lost, (std::vector<HaltRange>{{0, span(1).enter_tsc, 1}}));
    HaltReaderState below;
    d = drain_halt_log(0, copy_of(0, K - 1, K - 1), &below);
    EXPECT_EQ(d.spans, spans(0, K - 1));
    EXPECT_TRUE(d.lost.empty());
}

TEST(HaltLogDrain, ALossWithNoSpanKeptAfterItStaysOpenUntilOneIs) {
    HaltAccount a(0);
    ASSERT_EQ(a.add(copy_of(0, 100, 100)), "");
    // Spans 100 .. 119 were overwritten during the copy (written 632 after it): none kept.
    ASSERT_EQ(a.add(copy_of(100, 120, 120 + K)), "");
    CpuHalts h = a.halts();
    EXPECT_EQ(h.spans, spans(0, 100));
    ASSERT_EQ(h.lost.size(), 1u);
    EXPECT_EQ(h.lost[0], (HaltRange{span(99).exit_tsc, std::nullopt, 20}));  // to the end, so far
    // The next copy keeps spans again (from 640 - 511 = 129): one range, 100 .. 128.
    ASSERT_EQ(a.add(copy_of(120, 640, 640)), "");
    h = a.halts();
    ASSERT_EQ(h.lost.size(), 1u);
    EXPECT_EQ(h.lost[0], (HaltRange{span(99).exit_tsc, span(129).enter_tsc, 29}));
    EXPECT_EQ(h.spans.size(), 100u + (640 - 129));
}

TEST(HaltLogDrain, AHaltInProgressIsTheLastReadsHaltedSince) {
    HaltReaderState st;
    HaltDrain d = drain_halt_log(0, copy_of(0, 10, 10, span(10).enter_tsc), &st);
    EXPECT_EQ(d.halted_since, span(10).enter_tsc);
    // The writer logged span 10 and has not cleared halted_since yet: not a halt in progress.
    d = drain_halt_log(0, copy_of(10, 11, 11, span(10).enter_tsc), &st);
    EXPECT_TRUE(d.refusal.empty()) << d.refusal;
    EXPECT_EQ(d.spans, spans(10, 11));
    EXPECT_FALSE(d.halted_since);
    d = drain_halt_log(0, copy_of(11, 11, 11, 0), &st);
    EXPECT_FALSE(d.halted_since);
    // The account keeps the last read's.
    HaltAccount a(0);
    a.add(copy_of(0, 5, 5, span(5).enter_tsc));
    EXPECT_EQ(a.halts().halted_since, span(5).enter_tsc);
    a.add(copy_of(5, 6, 6));
    EXPECT_FALSE(a.halts().halted_since);
}

TEST(HaltLogDrain, ACpuThatDoesNotRecordHasNoHaltRecord) {
    HaltAccount a(3);
    HaltLogCopy c = copy_of(0, 10, 10, 5000);
    c.recording = 0;
    EXPECT_EQ(a.add(c), "");
    const CpuHalts h = a.halts();
    EXPECT_FALSE(h.recording);
    EXPECT_TRUE(h.spans.empty());
    EXPECT_TRUE(h.lost.empty());
    EXPECT_FALSE(h.halted_since);
    EXPECT_FALSE(h.refused_from);
    EXPECT_EQ(a.state().next, 0u);
    a.end_lost();  // a recorder error says nothing of a CPU that records nothing
    EXPECT_TRUE(a.halts().lost.empty());
}

// --- a guest that breaks the log's rules: each refusal names the CPU and the field ------------

struct Hostile {
    HaltAccount a{1};
    // Spans 4200 .. 4710 read (a first read: 0 .. 4199 lost); the next copy holds spans
    // 4711 .. 4719 with `bad` at 4711 + at.
    std::string with(HaltSpan bad, uint64_t at = 0) {
        EXPECT_EQ(a.add(copy_of(0, 4711, 4711)).size(), 0u);
        HaltLogCopy c = copy_of(4711, 4720, 4720);
        c.spans[(4711 + at) % K] = bad;
        return a.add(c);
    }
};

TEST(HaltLogHostile, ASpanThatEndsBeforeItBegins) {
    Hostile h;
    EXPECT_EQ(h.with({200, 100}), "CPU 1's halt span 4711: exit 100 before enter 200");
    const CpuHalts r = h.a.halts();
    EXPECT_EQ(r.refusal, "CPU 1's halt span 4711: exit 100 before enter 200");
    EXPECT_EQ(r.refused_from, span(4710).exit_tsc);  // from the last good exit
    EXPECT_EQ(r.spans, spans(4200, 4711));           // what was accepted stays
    EXPECT_FALSE(r.halted_since);
}

TEST(HaltLogHostile, TheSpansBeforeTheBadOneInTheSameCopyStay) {
    Hostile h;
    const HaltSpan bad{span(4714).exit_tsc + 10, span(4714).exit_tsc};
    EXPECT_EQ(h.with(bad, 4),
              "CPU 1's halt span 4715: exit " + std::to_string(bad.exit_tsc) + " before enter " + std::to_string(bad.enter_tsc));
    EXPECT_EQ(h.a.halts().spans, spans(4200, 4715));
    EXPECT_EQ(h.a.halts().refused_from, span(4714).exit_tsc);
}

TEST(HaltLogHostile, ASpanThatBeginsBeforeThePreviousEnded) {
    Hostile h;
    EXPECT_EQ(h.with({span(4710).exit_tsc - 1, span(4711).exit_tsc}),
              "CPU 1's halt span 4711: enter " + std::to_string(span(4710).exit_tsc - 1) +
                  " before the previous span's exit " + std::to_string(span(4710).exit_tsc));
}

TEST(HaltLogHostile, WrittenThatGoesBackwards) {
    HaltAccount a(0);
    ASSERT_EQ(a.add(copy_of(0, 1000, 1000)), "");
    EXPECT_EQ(a.add(copy_of(1000, 3, 3)), "CPU 0's halt log: written went backwards (3 after 1000)");
    EXPECT_EQ(a.halts().refused_from, span(999).exit_tsc);
    HaltAccount b(2);
    EXPECT_EQ(b.add(copy_of(0, 50, 40)), "CPU 2's halt log: written went backwards during the copy (40 after 50)");
    EXPECT_EQ(b.halts().refused_from, 0u);  // nothing accepted: refused from the start
}

TEST(HaltLogHostile, HaltedSinceBeforeTheLastExit) {
    HaltAccount a(1);
    EXPECT_EQ(a.add(copy_of(0, 10, 10, span(9).exit_tsc - 1)),
              "CPU 1's halt log: halted_since " + std::to_string(span(9).exit_tsc - 1) +
                  " is before the last span's exit " + std::to_string(span(9).exit_tsc));
    const CpuHalts r = a.halts();
    EXPECT_EQ(r.spans, spans(0, 10));  // read in the same copy, before halted_since
    EXPECT_EQ(r.refused_from, span(9).exit_tsc);
    EXPECT_FALSE(r.halted_since);
}

TEST(HaltLogHostile, ARecordingWordThatIsNeither0Nor1OrGoesBackTo0) {
    HaltAccount a(0);
    HaltLogCopy c = copy_of(0, 10, 10);
    c.recording = 7;
    EXPECT_EQ(a.add(c), "CPU 0's halt log: recording is 7, neither 0 nor 1");
    HaltAccount b(1);
    ASSERT_EQ(b.add(copy_of(0, 10, 10)), "");
    c.recording = 0;
    EXPECT_EQ(b.add(c), "CPU 1's halt log: recording went from 1 to 0");
    EXPECT_TRUE(b.halts().recording);
    EXPECT_EQ(b.halts().spans, spans(0, 10));
}

TEST(HaltLogHostile, ARefusedLogIsReadNoMore) {
    Hostile h;
    ASSERT_FALSE(h.with({200, 100}).empty());
    EXPECT_EQ(h.a.add(copy_of(4711, 5000, 5000, span(5000).enter_tsc)), "");  // good, but not read
    const CpuHalts r = h.a.halts();
    EXPECT_EQ(r.spans, spans(4200, 4711));
    EXPECT_FALSE(r.halted_since);
    // The loss before the first read is closed; what follows the refusal is the refusal's.
    EXPECT_EQ(r.lost, (std::vector<HaltRange>{{0, span(4200).enter_tsc, 4200}}));
}

TEST(HaltLogHostile, AnOpenLossEndsInTheRefusal) {
    HaltAccount a(0);
    ASSERT_EQ(a.add(copy_of(0, 100, 100)), "");
    ASSERT_EQ(a.add(copy_of(100, 120, 120 + K)), "");  // 100 .. 119 lost, nothing kept yet
    EXPECT_EQ(a.add(copy_of(120, 3, 3)), "CPU 0's halt log: written went backwards (3 after 120)");
    const CpuHalts r = a.halts();
    EXPECT_TRUE(r.lost.empty());  // inside the refused stretch
    EXPECT_EQ(r.refused_from, span(99).exit_tsc);
}

TEST(HaltLogHostile, AnAbsurdWrittenCostsOneRingAtMost) {
    HaltReaderState st = read_up_to(10);
    const uint64_t huge = ~uint64_t(0) - 3;
    HaltLogCopy c = copy_of(10, 0, 0);  // slots empty: zero spans
    c.written_before = c.written_after = huge;
    HaltDrain d = drain_halt_log(0, c, &st);  // slots of zeros: span huge - 511 enters at 0
    EXPECT_EQ(d.refusal, "CPU 0's halt span " + std::to_string(huge - K + 1) + ": enter 0 before the previous span's exit " +
                             std::to_string(span(9).exit_tsc));
}

// --- RegionReader::halt_log and HaltRecorder against an in-memory region ----------------------

// The guest's writer, perfdata.h's protocol: halted_since, the span, written + 1 (release),
// halted_since = 0.
void write_span(HaltLog& log, HaltSpan s) {
    __atomic_store_n(&log.halted_since, s.enter_tsc, __ATOMIC_RELAXED);
    const uint64_t n = __atomic_load_n(&log.written, __ATOMIC_RELAXED);
    HaltSpan& slot = log.spans[n % K];
    __atomic_store_n(&slot.enter_tsc, s.enter_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.exit_tsc, s.exit_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&log.written, n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&log.halted_since, uint64_t(0), __ATOMIC_RELAXED);
}

TEST(HaltLogRegion, TheReaderCopiesTheSpansTheRingStillHolds) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.perf(1)->halts.recording = 1;
    for (uint64_t n = 0; n < 600; ++n) write_span(r.perf(1)->halts, span(n));
    r.perf(1)->halts.halted_since = span(600).enter_tsc;
    RegionReader reader(r.path(), std::chrono::milliseconds(1000));
    HaltLogCopy c;
    ASSERT_EQ(reader.halt_log(1, 0, &c), RegionReader::HaltRead::kRead);
    EXPECT_EQ(c.recording, 1u);
    EXPECT_EQ(c.written_before, 600u);
    EXPECT_EQ(c.written_after, 600u);
    EXPECT_EQ(c.halted_since, span(600).enter_tsc);
    HaltReaderState st;
    HaltDrain d = drain_halt_log(1, c, &st);
    EXPECT_EQ(d.spans, spans(89, 600));
    EXPECT_EQ(d.lost, (std::vector<HaltRange>{{0, span(89).enter_tsc, 89}}));
    EXPECT_EQ(d.halted_since, span(600).enter_tsc);
    // CPU 0 logs nothing (recording 0); an uninitialised CPU is not read at all.
    ASSERT_EQ(reader.halt_log(0, 0, &c), RegionReader::HaltRead::kRead);
    EXPECT_EQ(c.recording, 0u);
    r.perf(0)->magic = 0;
    EXPECT_EQ(reader.halt_log(0, 0, &c), RegionReader::HaltRead::kNotInitialised);
    EXPECT_THROW(reader.halt_log(2, 0, &c), CollectError);
}

// The writer of `g_log`, run from the fault handler below: the guest's CPU, which writes while
// the reader copies.
HaltLog* g_log = nullptr;
uint8_t* g_page = nullptr;   // the page of the reader's mapping that faults
long g_page_size = 0;
uint64_t g_next_span = 0, g_spans_on_fault = 0;
bool g_faulted = false;

void on_fault(int, siginfo_t* si, void*) {
    auto* at = static_cast<uint8_t*>(si->si_addr);
    if (g_faulted || at < g_page || at >= g_page + g_page_size) {
        signal(SIGSEGV, SIG_DFL);  // not ours: crash as usual
        return;
    }
    g_faulted = true;
    mprotect(g_page, size_t(g_page_size), PROT_READ);
    for (uint64_t i = 0; i < g_spans_on_fault; ++i) write_span(*g_log, span(g_next_span++));
}

// The reader's own (read-only) mapping of the test region: /proc/self/maps' r--s line of it.
uint8_t* reader_mapping() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find("spinlab-test-region") != std::string::npos && line.find(" r--s ") != std::string::npos)
            return reinterpret_cast<uint8_t*>(std::stoull(line.substr(0, line.find('-')), nullptr, 16));
    return nullptr;
}

TEST(HaltLogRegion, SpansTheWriterOverwritesWhileTheReaderCopiesAreLostNotTaken) {
    // Deterministic: one page of the ring in the reader's mapping is made unreadable; when the
    // copy reaches it, the fault handler has the guest write 200 spans (over the slots not yet
    // copied) before the copy goes on.
    MemRegion r(1, 4, TraceLoggerMode::kRealTime);
    r.perf(0)->halts.recording = 1;
    for (g_next_span = 0; g_next_span < 1000; ++g_next_span) write_span(r.perf(0)->halts, span(g_next_span));
    RegionReader reader(r.path(), std::chrono::milliseconds(1000));
    uint8_t* base = reader_mapping();
    ASSERT_NE(base, nullptr);
    g_log = &r.perf(0)->halts;
    g_page_size = sysconf(_SC_PAGESIZE);
    g_spans_on_fault = 200;
    g_faulted = false;
    // The copy goes from span 488 (slot 488) round to 999 (slot 487); slot 250 (span 762) is on
    // a page it reaches after it began and before it ends.
    const auto slot = reinterpret_cast<const uint8_t*>(&r.perf(0)->halts.spans[250]) - r.base();
    g_page = base + (slot / g_page_size) * g_page_size;
    struct sigaction sa {}, old {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
    ASSERT_EQ(mprotect(g_page, size_t(g_page_size), PROT_NONE), 0);
    HaltLogCopy c;
    const RegionReader::HaltRead got = reader.halt_log(0, 0, &c);
    mprotect(g_page, size_t(g_page_size), PROT_READ);
    sigaction(SIGSEGV, &old, nullptr);
    ASSERT_EQ(got, RegionReader::HaltRead::kRead);
    ASSERT_TRUE(g_faulted);
    EXPECT_EQ(c.written_before, 1000u);
    EXPECT_EQ(c.written_after, 1200u);
    HaltReaderState st;
    HaltDrain d = drain_halt_log(0, c, &st);
    EXPECT_EQ(d.refusal, "");
    // Whole: n + 512 > 1200, so 689 .. 999; the rest (some of them overwritten) lost.
    EXPECT_EQ(d.spans, spans(689, 1000));
    EXPECT_EQ(d.lost, (std::vector<HaltRange>{{0, span(689).enter_tsc, 689}}));
}

TEST(HaltLogRegion, ACopyUnderAFloodingWriterTakesOnlyWholeSpans) {
    // Stress, not deterministic: the writer floods CPU 0's ring without pause while the reader
    // copies it again and again (now and then the writer overtakes the copy).
    MemRegion r(1, 4, TraceLoggerMode::kRealTime);
    r.perf(0)->halts.recording = 1;
    RegionReader reader(r.path(), std::chrono::milliseconds(1000));
    struct Guest {  // stopped and joined however the test ends
        std::atomic<bool> stop{false};
        std::thread thread;
        ~Guest() {
            stop = true;
            if (thread.joinable()) thread.join();
        }
    } guest;
    guest.thread = std::thread([&] {
        for (uint64_t n = 0; !guest.stop.load(std::memory_order_relaxed); ++n) write_span(r.perf(0)->halts, span(n));
    });
    HaltReaderState st;
    uint64_t taken = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until && !st.refused) {
        HaltLogCopy c;
        ASSERT_EQ(reader.halt_log(0, st.next, &c), RegionReader::HaltRead::kRead);
        HaltDrain d = drain_halt_log(0, c, &st);
        ASSERT_EQ(d.refusal, "");
        for (const HaltSpan& s : d.spans) ASSERT_EQ(s, span((s.enter_tsc - 1000) / 100)) << "a torn span";
        taken += d.spans.size();
    }
    EXPECT_GT(taken, 0u);
}

std::vector<std::string> thread_names() {
    std::vector<std::string> names;
    DIR* d = opendir("/proc/self/task");
    while (dirent* e = d ? readdir(d) : nullptr) {
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string name;
        if (std::getline(f, name)) names.push_back(name);
    }
    if (d) closedir(d);
    return names;
}

TEST(HaltRecorder, EverySpanWrittenIsReadOrInsideALostRange) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    for (uint32_t k = 0; k < 2; ++k) r.perf(k)->halts.recording = 1;
    HaltRecorder rec(r.path());
    while (rec.drains() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto names = thread_names();
    EXPECT_NE(std::find(names.begin(), names.end(), "spinlab-halts"), names.end());
    // The guest: both CPUs halt without pause for 3 ms at a time (the ring goes round many
    // times between two drains, and is written while it is copied), then a span every 20 us,
    // which the recorder keeps up with.
    uint64_t written[2] = {0, 0};
    std::thread guest([&] {
        using Clock = std::chrono::steady_clock;
        for (int round = 0; round < 8; ++round) {
            const bool flood = round % 2 == 0;
            const auto until = Clock::now() + std::chrono::milliseconds(flood ? 3 : 20);
            while (Clock::now() < until) {
                for (int i = 0; i < 64; ++i)
                    for (uint32_t k = 0; k < 2; ++k) write_span(r.perf(k)->halts, span(written[k]++));
                if (!flood) std::this_thread::sleep_for(std::chrono::microseconds(20 * 64));
            }
        }
        // Halted at the end on CPU 0: a halt in progress.
        __atomic_store_n(&r.perf(0)->halts.halted_since, span(written[0]).enter_tsc, __ATOMIC_RELAXED);
    });
    guest.join();
    rec.stop();
    EXPECT_EQ(rec.error(), "");
    EXPECT_GT(rec.drains(), 10u);
    const std::vector<CpuHalts> halts = rec.halts();
    ASSERT_EQ(halts.size(), 2u);
    for (uint32_t k = 0; k < 2; ++k) {
        const CpuHalts& h = halts[k];
        SCOPED_TRACE("CPU " + std::to_string(k));
        EXPECT_TRUE(h.recording);
        EXPECT_EQ(h.refusal, "");
        EXPECT_FALSE(h.refused_from);
        EXPECT_FALSE(h.lost.empty()) << "the bursts overran the ring";
        std::map<uint64_t, uint64_t> read;  // enter -> exit
        for (const HaltSpan& s : h.spans) read[s.enter_tsc] = s.exit_tsc;
        EXPECT_EQ(read.size(), h.spans.size());
        uint64_t lost_spans = 0;
        for (const HaltRange& l : h.lost) lost_spans += l.spans;
        EXPECT_EQ(h.spans.size() + lost_spans, written[k]);
        for (uint64_t n = 0; n < written[k]; ++n) {
            const HaltSpan s = span(n);
            if (auto it = read.find(s.enter_tsc); it != read.end()) {
                EXPECT_EQ(it->second, s.exit_tsc) << "span " << n << " read torn";
                continue;
            }
            const bool inside = std::any_of(h.lost.begin(), h.lost.end(), [&](const HaltRange& l) {
                return l.from <= s.enter_tsc && (!l.to || s.exit_tsc <= *l.to);
            });
            EXPECT_TRUE(inside) << "span " << n << " neither read nor inside a lost range";
        }
        ASSERT_FALSE(h.spans.empty());
        EXPECT_EQ(h.spans.back(), span(written[k] - 1)) << "stop() reads the last spans";
    }
    EXPECT_EQ(halts[0].halted_since, span(written[0]).enter_tsc);
    EXPECT_FALSE(halts[1].halted_since);
}

// The runner writes halts.csv right after a window: drain_now gives it a drain then, not up to
// a whole pace (here 10 s) later.
TEST(HaltRecorder, DrainNowReadsWhatTheGuestWroteWithoutWaitingOutThePace) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.perf(0)->halts.recording = 1;
    HaltRecorder rec(r.path(), std::chrono::seconds(10), std::chrono::seconds(10));
    while (rec.drains() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    write_span(r.perf(0)->halts, span(0));
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(rec.drain_now());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(rec.halts()[0].spans.size(), 1u);
    const auto t1 = std::chrono::steady_clock::now();
    rec.stop();  // not waiting out the 10 s either
    EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(2));
    EXPECT_FALSE(rec.drain_now(std::chrono::milliseconds(10)));  // stopped: no drain comes
}

TEST(HaltRecorder, AHostileCpuIsRefusedAndTheOthersGoOn) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    for (uint32_t k = 0; k < 2; ++k) r.perf(k)->halts.recording = 1;
    HaltRecorder rec(r.path());
    for (uint64_t n = 0; n < 100; ++n)
        for (uint32_t k = 0; k < 2; ++k) write_span(r.perf(k)->halts, span(n));
    const uint64_t drained = rec.drains();
    while (rec.drains() < drained + 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    write_span(r.perf(1)->halts, {200, 100});
    for (uint64_t n = 100; n < 200; ++n)
        for (uint32_t k = 0; k < 2; ++k) write_span(r.perf(k)->halts, span(n));
    rec.stop();
    EXPECT_EQ(rec.error(), "");  // a refused CPU is not the recorder's error
    const std::vector<CpuHalts> h = rec.halts();
    EXPECT_EQ(h[0].spans, spans(0, 200));
    EXPECT_EQ(h[0].refusal, "");
    EXPECT_EQ(h[1].spans, spans(0, 100));
    EXPECT_EQ(h[1].refusal, "CPU 1's halt span 100: exit 100 before enter 200");
    EXPECT_EQ(h[1].refused_from, span(99).exit_tsc);
}

TEST(HaltRecorder, AReLayoutEndsTheRecordAsLost) {
    MemRegion r(2, 4, TraceLoggerMode::kRealTime);
    r.perf(0)->halts.recording = 1;
    HaltRecorder rec(r.path());
    for (uint64_t n = 0; n < 10; ++n) write_span(r.perf(0)->halts, span(n));
    const uint64_t drained = rec.drains();
    while (rec.drains() < drained + 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // The guest reboots: a new generation, every CPU's block zeroed.
    ASSERT_EQ(region_layout(r.base(), r.size(), 2, 2'000'000'000, 1), RegionError::kNone);
    for (int i = 0; i < 200 && rec.error().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rec.stop();
    EXPECT_NE(rec.error().find("laid its shared region out again"), std::string::npos) << rec.error();
    const std::vector<CpuHalts> h = rec.halts();
    EXPECT_EQ(h[0].spans, spans(0, 10));
    EXPECT_EQ(h[0].lost, (std::vector<HaltRange>{{span(9).exit_tsc, std::nullopt, 0}}));
    EXPECT_FALSE(h[1].recording);
    EXPECT_TRUE(h[1].lost.empty());
}

}  // namespace
}  // namespace spinlab::collect

namespace spinlab::collect {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(DrainPace, DrainsAsOftenAsTheGuestHaltsBetweenItsBounds) {
    DrainPace pace(milliseconds(5), milliseconds(250));
    EXPECT_EQ(pace.next(), milliseconds(5));
    // No halts: the sleep grows twofold per drain up to the bound, never at once.
    pace.drained(0, milliseconds(5));
    EXPECT_EQ(pace.next(), milliseconds(10));
    for (int i = 0; i < 10; ++i) pace.drained(0, pace.next());
    EXPECT_EQ(pace.next(), milliseconds(250));
    // An idle CPU's timer tick, 100 halts a second: 25 spans in 250 ms keep a quarter of the
    // ring (128) for 1.28 s, so the bound holds.
    pace.drained(25, milliseconds(250));
    EXPECT_EQ(pace.next(), milliseconds(250));
    // A burst of 5,000 halts a second: 1,250 spans in 250 ms (some lost); the next drain comes
    // when a quarter of the ring would fill, 25.6 ms, at once.
    pace.drained(1250, milliseconds(250));
    EXPECT_EQ(pace.next(), nanoseconds(25'600'000));
    // Faster than the floor allows: the floor.
    pace.drained(512, milliseconds(1));
    EXPECT_EQ(pace.next(), milliseconds(5));
}

}  // namespace
}  // namespace spinlab::collect
