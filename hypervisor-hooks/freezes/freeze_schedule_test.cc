#include "freeze_schedule.h"

#include <gtest/gtest.h>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

constexpr uint64_t kMs = 1'000'000;

ScheduleParams params(ScheduleKind kind, uint64_t freeze_ms, uint64_t period_ms) {
    ScheduleParams p;
    p.kind = kind;
    p.freeze_ns = freeze_ms * kMs;
    p.period_ns = period_ms * kMs;
    p.seed = 42;
    return p;
}

TEST(FreezeSchedule, FixedIsPeriodicWithPhase) {
    ScheduleParams p = params(ScheduleKind::kFixed, 10, 100);
    p.phase_ns = 5 * kMs;
    FreezeSchedule s(p, 0);
    for (uint64_t k = 0; k < 5; ++k) {
        FreezeWindow w = s.next();
        EXPECT_EQ(w.start_ns, 5 * kMs + k * 100 * kMs);
        EXPECT_EQ(w.length_ns, 10 * kMs);
    }
}

TEST(FreezeSchedule, UniformKeepsOneWindowInsideEachPeriod) {
    FreezeSchedule s(params(ScheduleKind::kUniform, 10, 100), 0);
    bool varied = false;
    uint64_t first_offset = 0;
    for (uint64_t k = 0; k < 200; ++k) {
        FreezeWindow w = s.next();
        ASSERT_GE(w.start_ns, k * 100 * kMs);
        ASSERT_LE(w.start_ns + w.length_ns, (k + 1) * 100 * kMs);
        uint64_t offset = w.start_ns - k * 100 * kMs;
        if (k == 0) first_offset = offset;
        varied = varied || offset != first_offset;
    }
    EXPECT_TRUE(varied);
}

TEST(FreezeSchedule, PoissonHasTheMeanRateAndNeverOverlaps) {
    FreezeSchedule s(params(ScheduleKind::kPoisson, 10, 100), 0);
    uint64_t previous_end = 0;
    const int n = 5000;
    FreezeWindow w{};
    for (int i = 0; i < n; ++i) {
        w = s.next();
        ASSERT_GE(w.start_ns, previous_end);
        previous_end = w.start_ns + w.length_ns;
    }
    double mean_period_ms = static_cast<double>(previous_end) / n / kMs;
    EXPECT_NEAR(mean_period_ms, 100.0, 5.0);
}

TEST(FreezeSchedule, SameSeedSameWindowsOtherStreamOtherWindows) {
    ScheduleParams p = params(ScheduleKind::kUniform, 10, 100);
    p.freeze_max_ns = 30 * kMs;
    FreezeSchedule a(p, 0), b(p, 0), c(p, 1);
    bool differs = false;
    for (int i = 0; i < 50; ++i) {
        FreezeWindow wa = a.next(), wb = b.next(), wc = c.next();
        EXPECT_EQ(wa.start_ns, wb.start_ns);
        EXPECT_EQ(wa.length_ns, wb.length_ns);
        EXPECT_GE(wa.length_ns, 10 * kMs);
        EXPECT_LE(wa.length_ns, 30 * kMs);
        differs = differs || wa.start_ns != wc.start_ns;
    }
    EXPECT_TRUE(differs);
}

TEST(FreezeSchedule, ValidationNamesTheOption) {
    auto error = [](ScheduleParams p) {
        try {
            validate_schedule(p);
        } catch (const LoadError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error(params(ScheduleKind::kFixed, 100, 100)).rfind("--freeze-ms must be shorter", 0), 0u);
    EXPECT_EQ(error(params(ScheduleKind::kFixed, 0, 100)), "--freeze-ms must be above 0");
    EXPECT_EQ(error(params(ScheduleKind::kFixed, 1, 0)), "--period-ms must be above 0");
    ScheduleParams p = params(ScheduleKind::kFixed, 10, 100);
    p.freeze_max_ns = 5 * kMs;
    EXPECT_EQ(error(p), "--freeze-max-ms must lie between --freeze-ms and --period-ms");
    p = params(ScheduleKind::kUniform, 10, 100);
    p.phase_ns = kMs;
    EXPECT_EQ(error(p), "--phase-ms applies to --schedule fixed only");
    p = params(ScheduleKind::kFixed, 10, 100);
    p.phase_ns = 95 * kMs;
    EXPECT_EQ(error(p), "--phase-ms must leave room for a freeze inside the period");
    EXPECT_THROW(parse_schedule_kind("random", "schedule"), LoadError);
}

}  // namespace
}  // namespace spinlab::load
