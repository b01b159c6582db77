#include "freeze_record.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "hypervisor-hooks/common/fs_util.h"

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
    r.thawed_tsc = 3012;
    r.effective = {EffectiveStatus::kOk, 1020, 3050};
    std::string row = format_freeze_record(r, [](uint64_t tsc) { return tsc / 2; });
    EXPECT_EQ(row, "3,4242,1,1000,3000,1010,1014,0,3010,3012,1020,3050,ok,500,1500,505,507,0,1505,1506,510,1525\n");
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

TEST(FreezeRecord, EffectiveWindowsAreReadBackFromTheWritersRows) {
    auto row = [](int tid, EffectiveStatus status, uint64_t stopped, uint64_t resumed) {
        FreezeRecord r;
        r.tid = tid;
        r.effective = {status, stopped, resumed};
        return format_freeze_record(r, [](uint64_t tsc) { return tsc; });
    };
    std::string csv = freeze_record_header() + row(5, EffectiveStatus::kOk, 100, 200) +
                      row(5, EffectiveStatus::kNeverStopped, 0, 0) + row(6, EffectiveStatus::kNotResumed, 300, 0) +
                      row(6, EffectiveStatus::kNoEvents, 0, 0);
    auto spans = read_frozen_spans(csv);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].tid, 5);
    EXPECT_EQ(spans[0].stopped, 100u);
    EXPECT_EQ(spans[0].resumed, 200u);
    EXPECT_EQ(spans[1].tid, 6);
    EXPECT_EQ(spans[1].stopped, 300u);
    EXPECT_EQ(spans[1].resumed, UINT64_MAX);
    EXPECT_TRUE(read_frozen_spans("").empty());
    EXPECT_TRUE(read_frozen_spans(freeze_record_header()).empty());
}

TEST(FreezeRecord, BadRecordsNameTheLineAndColumn) {
    auto error_of = [](const std::string& csv) {
        try {
            read_frozen_spans(csv);
        } catch (const LoadError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of("seq,tid\n1,2\n"), "the freeze record has no column stopped_tsc");
    std::string ok = "0,5,0,0,0,0,0,0,0,0,100,200,ok,0,0,0,0,0,0,0,0,0\n";
    EXPECT_EQ(error_of(freeze_record_header() + ok + "0,5,0,0,0,0,0,0,0,0,1x0,200,ok,0,0,0,0,0,0,0,0,0\n"),
              "the freeze record, line 3: stopped_tsc '1x0' is not a number");
    EXPECT_EQ(error_of(freeze_record_header() + "0,5,0\n"), "the freeze record, line 2: 3 fields, the header has 22");
    EXPECT_EQ(error_of(freeze_record_header() + "0,5,0,0,0,0,0,0,0,0,100,200,maybe,0,0,0,0,0,0,0,0,0\n"),
              "the freeze record, line 2: unknown effective status 'maybe'");
}

}  // namespace
}  // namespace spinlab::load
