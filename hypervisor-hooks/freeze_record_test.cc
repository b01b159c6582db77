#include "freeze_record.h"

#include <gtest/gtest.h>

namespace spinlab::load {
namespace {

TEST(FreezeRecord, RowMatchesTheHeaderAndMapsEveryTimeToNs) {
    FreezeRecord r;
    r.seq = 3;
    r.tid = 4242;
    r.vcpu = 1;
    r.planned_begin_tsc = 1000;
    r.planned_end_tsc = 3000;
    r.begin_tsc = 1010;
    r.marked_tsc = 1014;
    r.frozen_tsc = 0;  // not confirmed: stays 0 in both clocks
    r.end_tsc = 3010;
    r.effective = {EffectiveStatus::kOk, 1020, 3050};
    std::string row = format_freeze_record(r, [](uint64_t tsc) { return tsc / 2; });
    EXPECT_EQ(row, "3,4242,1,1000,3000,1010,1014,0,3010,1020,3050,ok,500,1500,505,507,0,1505,510,1525\n");
    auto count = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    EXPECT_EQ(count(row), count(freeze_record_header()));
    EXPECT_EQ(freeze_record_header().rfind("seq,tid,vcpu,", 0), 0u);
}

TEST(FreezeRecord, UnknownEffectiveEndsAreZeroWithTheirStatus) {
    FreezeRecord r;
    r.effective = {EffectiveStatus::kNeverStopped, 0, 0};
    std::string row = format_freeze_record(r, [](uint64_t tsc) { return tsc + 7; });
    EXPECT_NE(row.find(",0,0,never-stopped,"), std::string::npos) << row;
}

}  // namespace
}  // namespace spinlab::load
