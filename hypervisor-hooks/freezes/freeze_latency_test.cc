#include "freeze_latency.h"

#include <gtest/gtest.h>

namespace spinlab::load {
namespace {

TEST(FreezeLatency, DistributionUsesNearestRank) {
    std::vector<double> s;
    for (int i = 100; i >= 1; --i) s.push_back(i);
    Distribution d = distribution(s);
    EXPECT_EQ(d.count, 100u);
    EXPECT_EQ(d.min_ms, 1);
    EXPECT_EQ(d.median_ms, 50);
    EXPECT_EQ(d.p99_ms, 99);
    EXPECT_EQ(d.max_ms, 100);
    EXPECT_EQ(distribution({}).max_ms, 0);
}

TEST(FreezeLatency, SeparatesThreadsOnAndOffCpuAtTheRequest) {
    FreezeLatency lat(1000);  // 1000 ticks per ms
    FreezeRecord on;           // on CPU: stopped 0.05 ms after the request
    on.planned_begin_tsc = 10'000;
    on.planned_end_tsc = 30'000;  // a 20 ms window
    on.begin_tsc = 10'080;
    on.marked_tsc = 10'090;
    on.frozen_tsc = 10'200;
    on.end_tsc = 30'080;
    on.thawed_tsc = 30'090;  // a 0.01 ms thaw write: applied 20.0 ms, as planned
    on.effective = {EffectiveStatus::kOk, 10'130, 30'500};
    FreezeRecord off = on;     // off CPU: stopped from the request, never confirmed
    off.frozen_tsc = 0;
    off.effective = {EffectiveStatus::kOk, 10'080, 31'080};
    FreezeRecord never = on;
    never.effective = {EffectiveStatus::kNeverStopped, 0, 0};
    lat.add(on);
    lat.add(off);
    lat.add(never);
    EXPECT_EQ(lat.json(),
              "{\"freezes\":3,\"effective_ok\":2,\"off_cpu_at_request\":1,"
              "\"request_late\":{\"count\":3,\"min_ms\":0.0800,\"median_ms\":0.0800,\"p99_ms\":0.0800,\"max_ms\":0.0800},"
              "\"write\":{\"count\":3,\"min_ms\":0.0100,\"median_ms\":0.0100,\"p99_ms\":0.0100,\"max_ms\":0.0100},"
              "\"thaw_write\":{\"count\":3,\"min_ms\":0.0100,\"median_ms\":0.0100,\"p99_ms\":0.0100,\"max_ms\":0.0100},"
              "\"applied_excess\":{\"count\":3,\"min_ms\":0.0000,\"median_ms\":0.0000,\"p99_ms\":0.0000,\"max_ms\":0.0000},"
              "\"stop\":{\"count\":1,\"min_ms\":0.0500,\"median_ms\":0.0500,\"p99_ms\":0.0500,\"max_ms\":0.0500},"
              "\"notify\":{\"count\":2,\"min_ms\":0.1200,\"median_ms\":0.1200,\"p99_ms\":0.1200,\"max_ms\":0.1200},"
              "\"resume\":{\"count\":2,\"min_ms\":0.4200,\"median_ms\":0.4200,\"p99_ms\":1.0000,\"max_ms\":1.0000}}");
    EXPECT_NE(lat.summary().find("stop min 0.050 median 0.050"), std::string::npos) << lat.summary();
}

}  // namespace
}  // namespace spinlab::load
