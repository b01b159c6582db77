// decode_switch_records: perf's ring-buffer bytes as the kernel lays them out
// (linux/perf_event.h), built here record by record.
#include "switch_records.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

void put(std::vector<unsigned char>& b, const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    b.insert(b.end(), c, c + n);
}

// A record with a sample_id (pid, tid, time, cpu, reserved) after `body`.
void record(std::vector<unsigned char>& b, uint32_t type, uint16_t misc, int tid, uint64_t time, uint32_t cpu,
            const std::vector<uint64_t>& body = {}) {
    perf_event_header h{type, misc, static_cast<uint16_t>(sizeof h + body.size() * 8 + 24)};
    put(b, &h, sizeof h);
    for (uint64_t v : body) put(b, &v, 8);
    uint32_t pid = 1, t = static_cast<uint32_t>(tid), res = 0;
    put(b, &pid, 4);
    put(b, &t, 4);
    put(b, &time, 8);
    put(b, &cpu, 4);
    put(b, &res, 4);
}

TEST(SwitchRecords, DecodesInOutPreemptAndLost) {
    std::vector<unsigned char> b;
    record(b, PERF_RECORD_SWITCH, 0, 42, 1000, 1);
    record(b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 42, 2000, 1);
    record(b, PERF_RECORD_LOST, 0, 42, 2500, 0, {7, 3});  // id 7, 3 lost
    record(b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 42, 3000, 0);
    record(b, PERF_RECORD_COMM, 0, 42, 3500, 0, {0, 0});  // another type: skipped
    std::vector<SwitchRecord> out;
    uint64_t lost = 0;
    EXPECT_EQ(decode_switch_records(b.data(), b.size(), out, lost), b.size());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(lost, 3u);
    EXPECT_TRUE(out[0].in);
    EXPECT_EQ(out[0].tid, 42);
    EXPECT_EQ(out[0].ts, 1000u);
    EXPECT_EQ(out[0].cpu, 1);
    EXPECT_FALSE(out[1].in);
    EXPECT_TRUE(out[1].preempt);
    EXPECT_FALSE(out[2].in);
    EXPECT_FALSE(out[2].preempt);
    EXPECT_EQ(out[2].cpu, 0);
}

TEST(SwitchRecords, ACutRecordWaitsForTheNextRead) {
    std::vector<unsigned char> b;
    record(b, PERF_RECORD_SWITCH, 0, 42, 1000, 1);
    record(b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 42, 2000, 1);
    std::vector<SwitchRecord> out;
    uint64_t lost = 0;
    EXPECT_EQ(decode_switch_records(b.data(), b.size() - 5, out, lost), 32u);
    EXPECT_EQ(out.size(), 1u);
}

TEST(SwitchRecords, ImpossibleSizeIsAnError) {
    std::vector<unsigned char> b(16, 0);
    perf_event_header h{PERF_RECORD_SWITCH, 0, 4};
    std::memcpy(b.data(), &h, sizeof h);
    std::vector<SwitchRecord> out;
    uint64_t lost = 0;
    EXPECT_THROW(decode_switch_records(b.data(), b.size(), out, lost), LoadError);
}

}  // namespace
}  // namespace spinlab::load
