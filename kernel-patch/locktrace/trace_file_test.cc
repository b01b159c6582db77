// locktrace/trace_file_test.cc: the buffer parser and the trace file reader on good, damaged and
// truncated input.
#include "trace_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "buffer_parser.h"
#include "test_area.h"
#include "writer.h"

namespace spinlab::locktrace {
namespace {

// A published buffer with n spinlock events from CPU 1.
std::vector<uint8_t> make_buffer(uint32_t n) {
    auto a = testing::make_area(2, 4096, 2, TraceLoggerMode::kRealTime);
    Writer w;
    writer_arm(w, a.area(), 1);
    for (uint32_t i = 0; i < n; i++) {
        auto* e = static_cast<TraceSpinlockEvent*>(begin_write(w, sizeof(TraceSpinlockEvent)));
        std::memset(e, 0, sizeof *e);
        fill_header(e->h, sizeof *e, TraceEventType::kSpinlock, 1, 3, 4, 100 + i);
        e->lock_address = 0x1000 + i;
        end_write(w, sizeof *e, 100 + i);
    }
    flush(w, 0);
    const uint8_t* b = area_buffer(a.area(), 1, 0);
    return std::vector<uint8_t>(b, b + reinterpret_cast<const TraceBufferHeader*>(b)->bytes_used);
}

TEST(BufferParser, AcceptsAWrittenBufferAndWalksItsEvents) {
    auto b = make_buffer(5);
    BufferView v;
    ASSERT_EQ(parse_buffer(b.data(), b.size(), &v), BufferError::kNone);
    EXPECT_EQ(v.header.event_count, 5u);
    std::vector<uint64_t> locks;
    for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
        TraceSpinlockEvent e;
        std::memcpy(&e, ev, sizeof e);
        EXPECT_EQ(h.cpu, 1);
        locks.push_back(e.lock_address);
    });
    EXPECT_EQ(locks, (std::vector<uint64_t>{0x1000, 0x1001, 0x1002, 0x1003, 0x1004}));
}

TEST(BufferParser, NamesEachKindOfDamage) {
    auto good = make_buffer(3);
    BufferView v;
    const size_t ev0 = sizeof(TraceBufferHeader);
    auto damaged = [&](auto change) {
        auto b = good;
        change(b);
        return parse_buffer(b.data(), b.size(), &v);
    };
    EXPECT_EQ(parse_buffer(good.data(), 10, &v), BufferError::kTooShort);
    EXPECT_EQ(parse_buffer(good.data(), good.size() - 1, &v), BufferError::kBadBytesUsed);
    EXPECT_EQ(damaged([&](auto& b) { b[ev0] = 12; b[ev0 + 1] = 0; }), BufferError::kBadEventSize);
    EXPECT_EQ(damaged([&](auto& b) { b[ev0] = 0; b[ev0 + 1] = 0x10; }), BufferError::kBadEventSize);
    EXPECT_EQ(damaged([&](auto& b) { b[ev0 + 2] = 99; }), BufferError::kUnknownType);
    EXPECT_EQ(damaged([&](auto& b) { b[ev0 + 2] = uint8_t(TraceEventType::kProfile); }),
              BufferError::kSizeMismatch);
    EXPECT_EQ(damaged([&](auto& b) { b[ev0 + 4] = 0; }), BufferError::kBadCpu);
    EXPECT_EQ(damaged([&](auto& b) { b[offsetof(TraceBufferHeader, event_count)] = 2; }),
              BufferError::kCountMismatch);
}

std::vector<uint8_t> make_file(const std::vector<std::vector<uint8_t>>& buffers) {
    std::vector<uint8_t> f;
    auto append = [&](const void* p, size_t n) {
        f.insert(f.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    const TraceFileHeader h = make_file_header(default_session_params(), 2, 2'600'000'000);
    append(&h, sizeof h);
    for (const auto& b : buffers) {
        const TraceFrameHeader fh = make_frame_header(TraceFrameKind::kBuffer, b.data(), uint32_t(b.size()));
        append(&fh, sizeof fh);
        append(b.data(), b.size());
    }
    return f;
}

TEST(TraceFile, ReadsEveryFrameBack) {
    const auto f = make_file({make_buffer(1), make_buffer(7)});
    TraceFileHeader h;
    ASSERT_EQ(parse_file_header(f.data(), f.size(), &h), FileError::kNone);
    EXPECT_EQ(h.cpu_count, 2u);
    size_t off = sizeof h;
    FrameView fr;
    std::vector<uint32_t> counts;
    FileError e;
    while ((e = next_frame(f.data(), f.size(), &off, &fr)) == FileError::kNone) {
        BufferView v;
        ASSERT_EQ(parse_buffer(fr.payload, fr.length, &v), BufferError::kNone);
        counts.push_back(v.header.event_count);
    }
    EXPECT_EQ(e, FileError::kEnd);
    EXPECT_EQ(counts, (std::vector<uint32_t>{1, 7}));
}

TEST(TraceFile, CutShortKeepsEveryWholeFrameBefore) {
    const auto one = make_file({make_buffer(2)});
    const auto f = make_file({make_buffer(2), make_buffer(3)});
    for (size_t cut = one.size() + 1; cut < f.size(); cut += 7) {
        size_t off = sizeof(TraceFileHeader);
        FrameView fr;
        ASSERT_EQ(next_frame(f.data(), cut, &off, &fr), FileError::kNone);
        EXPECT_EQ(next_frame(f.data(), cut, &off, &fr), FileError::kTruncated) << cut;
    }
}

TEST(TraceFile, RefusesDamage) {
    auto f = make_file({make_buffer(2)});
    TraceFileHeader h;
    EXPECT_EQ(parse_file_header(f.data(), 20, &h), FileError::kTooShort);
    auto g = f;
    g[0] ^= 1;
    EXPECT_EQ(parse_file_header(g.data(), g.size(), &h), FileError::kBadMagic);
    g = f;
    g[8] = 99;
    EXPECT_EQ(parse_file_header(g.data(), g.size(), &h), FileError::kBadVersion);
    size_t off = sizeof h;
    FrameView fr;
    g = f;
    g.back() ^= 0x40;
    EXPECT_EQ(next_frame(g.data(), g.size(), &off, &fr), FileError::kBadCrc);
    g = f;
    g[sizeof h] ^= 1;
    EXPECT_EQ(next_frame(g.data(), g.size(), &off, &fr), FileError::kBadFrame);
}

// Every version that has shipped is read by its own reader (kTraceFileVersions), into this
// build's header with the file's version kept; a version none knows is refused, and so is a
// known version whose header size is not that version's. The real files of version 1 (written by
// c3023ae's collector) are read end to end in analysis/tests/test_old_results.py.
TEST(TraceFile, ReadsEveryVersionThatShipped) {
    const auto f = make_file({make_buffer(2)});
    auto with_version = [&](uint32_t v, uint32_t word_0x34) {
        auto g = f;
        std::memcpy(g.data() + offsetof(TraceFileHeader, abi_version), &v, sizeof v);
        std::memcpy(g.data() + offsetof(TraceFileHeader, session) + 0x34, &word_0x34, sizeof word_0x34);
        return g;
    };
    ASSERT_EQ(kTraceFileVersionCount, 2u);
    TraceFileHeader h;
    auto v1 = with_version(1, 0xdead);  // version 1's reserved1: read as "not known"
    ASSERT_EQ(parse_file_header(v1.data(), v1.size(), &h), FileError::kNone);
    EXPECT_EQ(h.abi_version, 1u);
    EXPECT_EQ(h.session.number_of_buffers, 0u);
    EXPECT_EQ(h.cpu_count, 2u);
    EXPECT_EQ(h.tsc_hz, 2'600'000'000u);
    auto v2 = with_version(2, 7);
    ASSERT_EQ(parse_file_header(v2.data(), v2.size(), &h), FileError::kNone);
    EXPECT_EQ(h.abi_version, 2u);
    EXPECT_EQ(h.session.number_of_buffers, 7u);
    // The frames after either header are read alike.
    size_t off = sizeof h;
    FrameView fr;
    ASSERT_EQ(next_frame(v1.data(), v1.size(), &off, &fr), FileError::kNone);
    for (uint32_t v : {0u, 3u, 99u}) {
        auto g = with_version(v, 0);
        EXPECT_EQ(parse_file_header(g.data(), g.size(), &h), FileError::kBadVersion) << v;
        EXPECT_EQ(file_abi_version(g.data(), g.size()), v);
        EXPECT_EQ(trace_file_version(v), nullptr);
    }
    auto g = v1;
    g[offsetof(TraceFileHeader, header_size)] = 200;
    EXPECT_EQ(parse_file_header(g.data(), g.size(), &h), FileError::kBadVersion);
    EXPECT_EQ(file_abi_version(g.data(), 6), 0u);
}

// The error and event-type names come from one table each (X-macro rows): every value has its
// own phrase, and a value outside the table says so instead of reading past it.
TEST(NameTables, EveryValueHasItsOwnNameAndAnUnknownOneIsSaid) {
    EXPECT_STREQ(file_error_name(FileError::kBadCrc), "frame checksum mismatch");
    EXPECT_STREQ(file_error_name(FileError(99)), "invalid");
    EXPECT_STREQ(buffer_error_name(BufferError::kCountMismatch), "event count differs from the header's");
    EXPECT_STREQ(buffer_error_name(BufferError(99)), "invalid");
    EXPECT_STREQ(trace_event_type_name(uint16_t(TraceEventType::kSpinlock)), "spinlock");
    EXPECT_STREQ(trace_event_type_name(uint16_t(TraceEventType::kStackCacheCounters)), "stack-counters");
    EXPECT_STREQ(trace_event_type_name(0), "unknown");
    EXPECT_STREQ(trace_event_type_name(kTraceEventTypeMax + 1), "unknown");
    for (uint16_t a = 1; a <= kTraceEventTypeMax; a++)
        for (uint16_t b = a + 1; b <= kTraceEventTypeMax; b++)
            EXPECT_STRNE(trace_event_type_name(a), trace_event_type_name(b)) << a << " " << b;
}

}  // namespace
}  // namespace spinlab::locktrace
