// locktrace/trace_session_test.cc: parameter validation, planning and the area header.
#include "trace_session.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_area.h"

namespace spinlab::locktrace {
namespace {

std::string invalid_name(const TraceSessionInformation& s) {
    const SessionParamInfo* p = first_invalid_session_param(s);
    return p ? p->name : "";
}

void set_field(TraceSessionInformation& s, const SessionParamInfo& p, uint32_t v) {
    std::memcpy(reinterpret_cast<char*>(&s) + p.offset, &v, sizeof v);
}

TEST(SessionParams, DefaultsAreValid) {
    EXPECT_EQ(first_invalid_session_param(default_session_params()), nullptr);
}

TEST(SessionParams, EveryFieldJustOutsideItsLimitsIsNamed) {
    for (const SessionParamInfo& p : kSessionParamInfo) {
        TraceSessionInformation s = default_session_params();
        if (p.minimum > 0) {
            set_field(s, p, p.minimum - 1);
            EXPECT_EQ(invalid_name(s), p.name) << "below minimum";
        }
        s = default_session_params();
        set_field(s, p, p.maximum + 1);
        if (std::string(p.name) == "MinimumBuffers") s.maximum_buffers = kTraceMaxBuffers;
        EXPECT_EQ(invalid_name(s), p.name) << "above maximum";
    }
}

TEST(SessionParams, EveryFieldAtItsLimitsIsAccepted) {
    for (const SessionParamInfo& p : kSessionParamInfo) {
        for (uint32_t v : {p.minimum, p.maximum}) {
            TraceSessionInformation s = default_session_params();
            s.minimum_buffers = kTraceMinBuffers;
            s.maximum_buffers = kTraceMaxBuffers;
            set_field(s, p, v);
            if (std::string(p.name) == "MinimumBuffers") s.maximum_buffers = kTraceMaxBuffers;
            if (std::string(p.name) == "MaximumBuffers") s.minimum_buffers = kTraceMinBuffers;
            EXPECT_EQ(invalid_name(s), "") << p.name << " = " << v;
        }
    }
}

TEST(SessionParams, BufferSizeMustBeWholePages) {
    TraceSessionInformation s = default_session_params();
    s.buffer_size = 4096 * 3 + 8;
    EXPECT_EQ(invalid_name(s), "BufferSize");
    s.buffer_size = 4096 * 3;
    EXPECT_EQ(invalid_name(s), "");
}

TEST(SessionParams, MinimumAboveMaximumNamesMinimumBuffers) {
    TraceSessionInformation s = default_session_params();
    s.minimum_buffers = 9;
    s.maximum_buffers = 8;
    EXPECT_EQ(invalid_name(s), "MinimumBuffers");
}

TEST(SessionParams, UnknownEnableFlagIsNamed) {
    TraceSessionInformation s = default_session_params();
    s.enable_flags = kTraceGroupAll + 1;
    EXPECT_EQ(invalid_name(s), "EnableFlags");
}

TEST(SessionPlan, TakesAsManyAsFitUpToMaximum) {
    TraceSessionInformation s = default_session_params();
    s.buffer_size = 4096;
    s.minimum_buffers = 2;
    s.maximum_buffers = 8;
    SessionPlan plan;
    ASSERT_TRUE(plan_session(s, trace_area_needed(4096, 8, 2), 2, &plan));
    EXPECT_EQ(plan.buffers_per_cpu, 8u);
    ASSERT_TRUE(plan_session(s, trace_area_needed(4096, 8, 2) * 4, 2, &plan));
    EXPECT_EQ(plan.buffers_per_cpu, 8u);
    ASSERT_TRUE(plan_session(s, trace_area_needed(4096, 5, 2) + 4095, 2, &plan));
    EXPECT_EQ(plan.buffers_per_cpu, 5u);
}

TEST(SessionPlan, RefusesWhenFewerThanMinimumFit) {
    TraceSessionInformation s = default_session_params();
    s.buffer_size = 4096;
    s.minimum_buffers = 4;
    s.maximum_buffers = 8;
    SessionPlan plan{123, 0, 0, 0};
    EXPECT_FALSE(plan_session(s, trace_area_needed(4096, 3, 2), 2, &plan));
    EXPECT_EQ(plan.buffers_per_cpu, 123u);
    EXPECT_FALSE(plan_session(s, 100, 2, &plan));
    EXPECT_FALSE(plan_session(s, 1 << 20, 0, &plan));
}

TEST(Area, StartThenParseGivesTheSession) {
    auto a = testing::make_area(3, 8192, 4, TraceLoggerMode::kCircular, 42);
    TraceAreaHeader h;
    ASSERT_EQ(area_parse(a.area(), a.size, &h), nullptr);
    EXPECT_EQ(h.session.session_id, 42u);
    EXPECT_EQ(h.session.cpu_count, 3u);
    EXPECT_EQ(h.session.buffers_per_cpu, 4u);
    EXPECT_EQ(h.session.state, uint32_t(TraceState::kRunning));
    EXPECT_EQ(h.session.logger_mode, uint32_t(TraceLoggerMode::kCircular));
    EXPECT_EQ(h.seq % 2, 0u);
    area_stop(a.area(), 5000);
    ASSERT_EQ(area_parse(a.area(), a.size, &h), nullptr);
    EXPECT_EQ(h.session.state, uint32_t(TraceState::kStopped));
    EXPECT_EQ(h.session.stop_tsc, 5000u);
    // MinimumBuffers allocated per CPU; the slot tables lie between the controls and buffers.
    EXPECT_EQ(area_control(a.area(), 2)->buffers_allocated, 4u);
    EXPECT_GE(h.slots_offset, h.control_offset + 3 * sizeof(TraceCpuControl));
    EXPECT_LE(h.slots_offset + 3 * 4 * 4, h.buffers_offset);
    // Buffers of different CPUs never overlap and stay inside the area.
    EXPECT_EQ(area_buffer(a.area(), 1, 0) - area_buffer(a.area(), 0, 0), 4 * 8192);
    EXPECT_LE(area_buffer(a.area(), 2, 3) + 8192, static_cast<uint8_t*>(a.area()) + a.size);
}

TEST(Area, ParseRefusesWhatDoesNotFitOrIsBusy) {
    auto a = testing::make_area(2, 4096, 2, TraceLoggerMode::kRealTime);
    TraceAreaHeader h;
    EXPECT_NE(area_parse(a.area(), a.size - 1, &h), nullptr);  // last buffer outside
    EXPECT_NE(area_parse(a.area(), 100, &h), nullptr);
    auto* hdr = static_cast<TraceAreaHeader*>(a.area());
    hdr->seq++;
    EXPECT_STREQ(area_parse(a.area(), a.size, &h), "busy");
    hdr->seq++;
    hdr->session.cpu_count = 65;
    EXPECT_NE(area_parse(a.area(), a.size, &h), nullptr);
    hdr->session.cpu_count = 2;
    const uint64_t slots = hdr->slots_offset;
    hdr->slots_offset = hdr->control_offset;  // slot tables over the controls
    EXPECT_NE(area_parse(a.area(), a.size, &h), nullptr);
    hdr->slots_offset = hdr->buffers_offset - 4;  // over the first buffer
    EXPECT_NE(area_parse(a.area(), a.size, &h), nullptr);
    hdr->slots_offset = slots;
    EXPECT_EQ(area_parse(a.area(), a.size, &h), nullptr);
    hdr->buffers_offset = 0;
    EXPECT_NE(area_parse(a.area(), a.size, &h), nullptr);
    std::vector<uint8_t> zeros(a.size);
    EXPECT_NE(area_parse(zeros.data(), zeros.size(), &h), nullptr);
}

}  // namespace
}  // namespace spinlab::locktrace
