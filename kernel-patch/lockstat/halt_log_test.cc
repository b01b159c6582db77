// lockstat/halt_log_test.cc: the halt log's writer (ring index, wrap-around, the order of its
// stores, nesting) and its reader's copy.
#include "halt_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace spinlab::lockstat {
namespace {

std::unique_ptr<HaltLog> fresh() {
    auto l = std::make_unique<HaltLog>();
    *l = HaltLog{};
    l->recording = 1;
    return l;
}

// One whole halt from `enter` to `exit`.
void halt(HaltLog& l, uint64_t enter, uint64_t exit) {
    const uint64_t e = halt_log_enter(l, enter);
    ASSERT_EQ(e, enter);
    halt_log_exit(l, e, exit);
}

TEST(HaltLog, BeginSetsHaltedSinceAndEndWritesTheSpanThenClearsIt) {
    auto l = fresh();
    const uint64_t e = halt_log_enter(*l, 1000);
    EXPECT_EQ(e, 1000u);
    EXPECT_EQ(l->halted_since, 1000u);  // the halt in progress shows
    EXPECT_EQ(l->written, 0u);          // and is not a span yet
    halt_log_exit(*l, e, 1500);
    EXPECT_EQ(l->written, 1u);
    EXPECT_EQ(l->halted_since, 0u);
    EXPECT_EQ(l->spans[0].enter_tsc, 1000u);
    EXPECT_EQ(l->spans[0].exit_tsc, 1500u);
    EXPECT_EQ(l->recording, 1u);  // the writer leaves the flag alone
}

TEST(HaltLog, SpansLandAtWrittenModNAndWrittenAdvancesByOne) {
    auto l = fresh();
    for (uint64_t i = 0; i < 10; i++) {
        halt(*l, 100 + 10 * i, 105 + 10 * i);
        EXPECT_EQ(l->written, i + 1);
        EXPECT_EQ(l->spans[i].enter_tsc, 100 + 10 * i);
        EXPECT_EQ(l->spans[i].exit_tsc, 105 + 10 * i);
    }
    EXPECT_EQ(l->spans[10].enter_tsc, 0u);  // nothing beyond
}

TEST(HaltLog, WrapsAroundAfterNSpans) {
    auto l = fresh();
    const uint64_t total = 2 * kHaltLogSpans + 7;
    for (uint64_t i = 0; i < total; i++) halt(*l, 2 * i + 1, 2 * i + 2);
    EXPECT_EQ(l->written, total);
    // Slot s holds the newest span n with n % N == s.
    for (uint32_t s = 0; s < kHaltLogSpans; s++) {
        const uint64_t n = s < 7 ? 2 * kHaltLogSpans + s : kHaltLogSpans + s;
        EXPECT_EQ(l->spans[s].enter_tsc, 2 * n + 1) << "slot " << s;
        EXPECT_EQ(l->spans[s].exit_tsc, 2 * n + 2) << "slot " << s;
    }
    EXPECT_EQ(halt_log_slot(kHaltLogSpans), 0u);
    EXPECT_EQ(halt_log_slot(kHaltLogSpans + 3), 3u);
}

TEST(HaltLog, SpanIsWholeBeforeWrittenMovesAndHaltedSinceClearsAfter) {
    // The stores' order, seen through a log whose next slot the exit is about to fill: before
    // halt_log_exit the slot is old and written not yet moved; after, both are new.
    auto l = fresh();
    halt(*l, 10, 20);
    const uint64_t e = halt_log_enter(*l, 30);
    EXPECT_EQ(l->written, 1u);
    EXPECT_EQ(l->spans[1].enter_tsc, 0u);
    EXPECT_EQ(l->halted_since, 30u);
    halt_log_exit(*l, e, 45);
    EXPECT_EQ(l->written, 2u);
    EXPECT_EQ(l->spans[1].enter_tsc, 30u);
    EXPECT_EQ(l->spans[1].exit_tsc, 45u);
    EXPECT_EQ(l->halted_since, 0u);
}

TEST(HaltLog, EnterBeforeExitAndSpansDoNotOverlap) {
    auto l = fresh();
    uint64_t t = 5;
    for (int i = 0; i < 20; i++) {
        const uint64_t e = halt_log_enter(*l, t);
        t += 3 + i;  // the hlt
        halt_log_exit(*l, e, t);
        t += 2;  // running between halts
    }
    for (uint32_t i = 0; i < 20; i++) {
        EXPECT_LE(l->spans[i].enter_tsc, l->spans[i].exit_tsc);
        if (i) {
            EXPECT_LE(l->spans[i - 1].exit_tsc, l->spans[i].enter_tsc);
        }
    }
}

TEST(HaltLog, AbandonClearsHaltedSinceWithoutASpan) {
    auto l = fresh();
    const uint64_t e = halt_log_enter(*l, 77);
    EXPECT_EQ(l->halted_since, 77u);
    halt_log_abandon(*l, e);  // pv_wait found the byte changed: no hlt
    EXPECT_EQ(l->halted_since, 0u);
    EXPECT_EQ(l->written, 0u);
    halt(*l, 80, 90);  // the next halt logs normally
    EXPECT_EQ(l->written, 1u);
    EXPECT_EQ(l->spans[0].enter_tsc, 80u);
}

TEST(HaltLog, AHaltInsideAnothersSpanIsNotLogged) {
    // The idle loop's hlt is woken by an interrupt whose handler halts in pv_wait: the inner
    // halt is inside the outer span, which ends after the handler.
    auto l = fresh();
    const uint64_t outer = halt_log_enter(*l, 100);
    const uint64_t inner = halt_log_enter(*l, 150);
    EXPECT_EQ(inner, 0u);
    EXPECT_EQ(l->halted_since, 100u);
    halt_log_exit(*l, inner, 170);
    EXPECT_EQ(l->written, 0u);
    EXPECT_EQ(l->halted_since, 100u);
    halt_log_abandon(*l, inner);  // and an inner pv_wait that did not halt
    EXPECT_EQ(l->halted_since, 100u);
    halt_log_exit(*l, outer, 200);
    EXPECT_EQ(l->written, 1u);
    EXPECT_EQ(l->spans[0].enter_tsc, 100u);
    EXPECT_EQ(l->spans[0].exit_tsc, 200u);
    EXPECT_EQ(l->halted_since, 0u);
}

TEST(HaltLog, EnterTscZeroIsLoggedAsOne) {
    auto l = fresh();
    const uint64_t e = halt_log_enter(*l, 0);
    EXPECT_EQ(e, 1u);
    EXPECT_EQ(l->halted_since, 1u);  // 0 would read as "not halted"
    halt_log_exit(*l, e, 9);
    EXPECT_EQ(l->spans[0].enter_tsc, 1u);
}

TEST(HaltLog, ReadFromAnIndexSaysWhatWasLost) {
    auto l = fresh();
    std::vector<HaltSpan> out(kHaltLogSpans);
    HaltLogRead c = halt_log_read(*l, 0, out.data(), kHaltLogSpans);
    EXPECT_EQ(c.count, 0u);
    EXPECT_EQ(c.lost, 0u);
    for (uint64_t i = 0; i < 5; i++) halt(*l, 10 * i + 1, 10 * i + 5);
    c = halt_log_read(*l, 2, out.data(), kHaltLogSpans);
    EXPECT_EQ(c.first, 2u);
    EXPECT_EQ(c.count, 3u);
    EXPECT_EQ(c.lost, 0u);
    EXPECT_EQ(c.written, 5u);
    EXPECT_EQ(out[0].enter_tsc, 21u);
    EXPECT_EQ(out[2].exit_tsc, 45u);
    // A cap: the oldest first, the rest on the next copy.
    c = halt_log_read(*l, 0, out.data(), 2);
    EXPECT_EQ(c.first, 0u);
    EXPECT_EQ(c.count, 2u);
    EXPECT_EQ(out[1].enter_tsc, 11u);
    // Wrapped: of 0..N+9, spans 0..10 are gone (span N+10 may be overwriting span 10).
    for (uint64_t i = 5; i < kHaltLogSpans + 10; i++) halt(*l, 10 * i + 1, 10 * i + 5);
    c = halt_log_read(*l, 0, out.data(), kHaltLogSpans);
    EXPECT_EQ(c.written, kHaltLogSpans + 10);
    EXPECT_EQ(c.first, 11u);
    EXPECT_EQ(c.lost, 11u);
    EXPECT_EQ(c.count, kHaltLogSpans - 1);
    EXPECT_EQ(out[0].enter_tsc, 111u);
    EXPECT_EQ(out[c.count - 1].enter_tsc, 10 * (kHaltLogSpans + 9) + 1);
    // From beyond written: nothing, nothing lost.
    c = halt_log_read(*l, kHaltLogSpans + 50, out.data(), kHaltLogSpans);
    EXPECT_EQ(c.count, 0u);
    EXPECT_EQ(c.lost, 0u);
}

TEST(HaltLog, AReadBesideTheWriterHasOnlyWholeSpansInOrder) {
    // Span k is {3k + 1, 3k + 2}: a copied span that was torn, overwritten or misplaced shows.
    auto l = fresh();
    constexpr uint64_t kSpans = 40 * kHaltLogSpans;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        for (uint64_t k = 0; k < kSpans; k++) halt_log_exit(*l, halt_log_enter(*l, 3 * k + 1), 3 * k + 2);
        done = true;
    });
    std::vector<HaltSpan> out(kHaltLogSpans);
    uint64_t next = 0, seen = 0, lost = 0;
    bool ok = true;
    while (ok && (!done || next < __atomic_load_n(&l->written, __ATOMIC_ACQUIRE))) {
        const HaltLogRead c = halt_log_read(*l, next, out.data(), 64);
        if (c.first != next + c.lost) ok = false;
        for (uint32_t i = 0; i < c.count && ok; i++) {
            const uint64_t k = c.first + i;
            if (out[i].enter_tsc != 3 * k + 1 || out[i].exit_tsc != 3 * k + 2) {
                ADD_FAILURE() << "span " << k << " read as {" << out[i].enter_tsc << ", " << out[i].exit_tsc << "}";
                ok = false;
            }
        }
        seen += c.count;
        lost += c.lost;
        next = c.first + c.count;
    }
    writer.join();
    EXPECT_TRUE(ok);
    EXPECT_EQ(seen + lost, kSpans);
}

}  // namespace
}  // namespace spinlab::lockstat
