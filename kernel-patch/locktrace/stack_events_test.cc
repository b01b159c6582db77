// locktrace/stack_events_test.cc: an event's stack in the trace through the stack cache, event
// by event: a definition on first use then references, a delete (with the frames) for every
// evicted stack, inline walks when the cache cannot hold a stack or is off, the rundown of
// every cached stack at stop with the counters; and the stack settings' validation and clamping.
#include "stack_events.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "buffer_parser.h"
#include "stack_settings.h"
#include "test_area.h"

namespace spinlab::locktrace {
namespace {

using Frames = std::vector<uint64_t>;

struct Ev {
    uint16_t type;
    TraceStackEvent s;
    Frames frames;
};

// A CPU's writer, its stack cache (or none) and what it has written.
struct Cpu {
    testing::TestArea area = testing::make_area(1, 64 * 1024, 8, TraceLoggerMode::kCircular);
    Writer w;
    std::vector<uint64_t> memory;
    stackwalk::StackCache cache;
    uint64_t scratch[kTraceMaxStackFrames];
    bool cached;
    explicit Cpu(uint32_t pieces, bool with_cache = true) : cached(with_cache) {
        writer_arm(w, area.area(), 0);
        const uint64_t budget = uint64_t(pieces) * sizeof(stackwalk::StackPiece);
        memory.resize(stackwalk::stack_cache_bytes(256, budget) / 8 + 1);
        cache.init(memory.data(), 256, budget, 0);
    }
    StackEventContext ctx() { return {&w, cached ? &cache : nullptr, scratch, 0, 5, 6}; }
    void stack(const Frames& f, uint64_t tsc) {
        write_event_stack(ctx(), {f.data(), uint32_t(f.size()), 0, uint8_t(TraceStackEnd::kNone)},
                          uint16_t(TraceEventType::kSpinlock), tsc);
    }
    // Every event written so far (flushes the buffer being written).
    std::vector<Ev> events() {
        flush(w, 0);
        std::vector<Ev> out;
        const TraceAreaHeader& h = area.header();
        for (uint64_t s = 0; s < area_control(area.area(), 0)->produced; s++) {
            BufferView v;
            const uint8_t* b = area_buffer(area.area(), 0, uint32_t(s % h.session.buffers_per_cpu));
            EXPECT_EQ(parse_buffer(b, h.session.buffer_size, &v), BufferError::kNone);
            for_each_event(v, [&](const TraceEventHeader& eh, const uint8_t* ev) {
                Ev e{eh.type, {}, {}};
                if (trace_event_has_frames(eh.type)) {
                    std::memcpy(&e.s, ev, sizeof e.s);
                    e.frames.resize(e.s.nframes);
                    std::memcpy(e.frames.data(), ev + sizeof e.s, 8 * e.s.nframes);
                }
                out.push_back(e);
            });
        }
        return out;
    }
};

// Stacks that all fall in bucket `b` of 256.
Frames in_bucket(uint32_t b, int k, uint32_t depth = 3) {
    for (uint64_t x = 1;; ++x) {
        Frames f(depth);
        for (uint32_t i = 0; i < depth; ++i) f[i] = 0x100000 + x * 16 + i;
        if (stackwalk::stack_hash(f.data(), depth) % 256 == b && k-- == 0) return f;
    }
}

constexpr uint16_t T(TraceEventType t) { return uint16_t(t); }

TEST(StackEvents, FirstUseDefinesThenReferencesByKey) {
    Cpu c(64);
    const Frames f{0x1000, 0x2000, 0x3000};
    c.stack(f, 100);
    c.stack(f, 200);
    const auto ev = c.events();
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].type, T(TraceEventType::kStackDefinition));
    EXPECT_EQ(ev[0].frames, f);
    EXPECT_EQ(ev[0].s.depth, 3u);
    EXPECT_EQ(ev[1].type, T(TraceEventType::kStackReference));
    EXPECT_EQ(ev[1].s.key, ev[0].s.key);
    EXPECT_EQ(ev[1].s.event_tsc, 100u);
    EXPECT_EQ(ev[1].s.event_type, T(TraceEventType::kSpinlock));
    EXPECT_TRUE(ev[1].frames.empty());
    EXPECT_EQ(ev[2].type, T(TraceEventType::kStackReference)) << "a hit writes the reference only";
    EXPECT_EQ(ev[2].s.key, ev[0].s.key);
    EXPECT_EQ(ev[2].s.event_tsc, 200u);
    const TraceCpuControl* k = area_control(c.area.area(), 0);
    EXPECT_EQ(k->stack_hits, 1u);
    EXPECT_EQ(k->stack_misses, 1u);
    EXPECT_EQ(k->stack_definitions_written, 1u);
}

TEST(StackEvents, EveryEvictionWritesADeleteWithTheEvictedFrames) {
    Cpu c(64);
    std::vector<Frames> s;
    for (int i = 0; i < 7; ++i) s.push_back(in_bucket(9, i));
    for (int i = 0; i < 4; ++i) c.stack(s[i], 10 + i);
    c.stack(s[0], 20);  // s0 most recent: s1 is the least recently used
    c.stack(s[4], 30);  // evicts s1
    c.stack(s[5], 40);  // evicts s2
    c.stack(s[6], 50);  // evicts s3
    const auto ev = c.events();
    std::map<uint64_t, Frames> defined;
    std::vector<Frames> deleted;
    for (const Ev& e : ev) {
        if (e.type == T(TraceEventType::kStackDefinition)) defined[e.s.key] = e.frames;
        if (e.type == T(TraceEventType::kStackDelete)) {
            EXPECT_EQ(defined.at(e.s.key), e.frames) << "a delete names a defined key, with its frames";
            deleted.push_back(e.frames);
        }
    }
    EXPECT_EQ(deleted, (std::vector<Frames>{s[1], s[2], s[3]})) << "least recently used first";
    // The delete comes before the definition of the stack that took the place.
    for (size_t i = 0; i + 1 < ev.size(); ++i) {
        if (ev[i].type == T(TraceEventType::kStackDelete)) {
            EXPECT_EQ(ev[i + 1].type, T(TraceEventType::kStackDefinition));
        }
    }
    EXPECT_EQ(area_control(c.area.area(), 0)->stack_evictions, 3u);
    EXPECT_EQ(area_control(c.area.area(), 0)->stack_deletes_written, 3u);
}

TEST(StackEvents, RundownHasEveryCachedStackThenTheCounters) {
    Cpu c(64);
    std::vector<Frames> s;
    for (int i = 0; i < 6; ++i) s.push_back(in_bucket(3, i));
    const Frames other{0xaaa, 0xbbb};
    for (const Frames& f : s) c.stack(f, 1);
    c.stack(other, 2);
    c.stack(other, 3);
    write_stack_rundown(c.ctx(), 99);
    const auto ev = c.events();
    std::map<uint64_t, Frames> rundown;
    const Ev* counters = nullptr;
    for (const Ev& e : ev) {
        if (e.type == T(TraceEventType::kStackRundown)) rundown[e.s.key] = e.frames;
        if (e.type == T(TraceEventType::kStackCacheCounters)) counters = &e;
    }
    // Cached: s2..s5 (s0, s1 evicted) and `other`.
    std::vector<Frames> got;
    for (auto& [k, f] : rundown) got.push_back(f);
    std::vector<Frames> want{s[2], s[3], s[4], s[5], other};
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
    ASSERT_NE(counters, nullptr);
    EXPECT_EQ(ev.back().type, T(TraceEventType::kStackCacheCounters)) << "the counters come last";
    const TraceCpuControl* k = area_control(c.area.area(), 0);
    EXPECT_EQ(k->stack_rundowns_written, 5u);
    EXPECT_EQ(k->stack_misses, 7u);
    EXPECT_EQ(k->stack_hits, 1u);
    EXPECT_EQ(k->stack_evictions, 2u);
}

TEST(StackEvents, AStackTheCacheCannotHoldIsWrittenInline) {
    Cpu c(1);  // one piece: 32 frames
    Frames deep(40);
    for (uint32_t i = 0; i < deep.size(); ++i) deep[i] = 0x5000 + i;
    c.stack(deep, 7);
    const auto ev = c.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, T(TraceEventType::kStackWalk));
    EXPECT_EQ(ev[0].frames, deep);
    EXPECT_EQ(ev[0].s.key, 0u);
    EXPECT_EQ(ev[0].s.event_tsc, 7u);
    EXPECT_EQ(area_control(c.area.area(), 0)->stack_uncached, 1u);
}

TEST(StackEvents, WithoutTheCacheEveryStackIsInline) {
    Cpu c(64, false);
    const Frames f{1, 2, 3, 4};
    c.stack(f, 1);
    c.stack(f, 2);
    const auto ev = c.events();
    ASSERT_EQ(ev.size(), 2u);
    for (const Ev& e : ev) {
        EXPECT_EQ(e.type, T(TraceEventType::kStackWalk));
        EXPECT_EQ(e.frames, f);
    }
    EXPECT_EQ(stack_walk_bytes(4), 48u + 32u);
    EXPECT_EQ(stack_reference_bytes(), 48u);
}

TEST(StackSettings, FlagsCachingAndDepthAreValidatedByName) {
    TraceStackInformation s = default_stack_settings();
    EXPECT_EQ(first_invalid_stack_param(s), nullptr);
    s.stack_flags = kTraceGroupSpinlock | kTraceGroupProfile | kTraceGroupContextSwitch | kTraceGroupReadyThread;
    EXPECT_EQ(first_invalid_stack_param(s), nullptr);
    s.stack_flags = kTraceGroupProcessThread;  // no stacks on process events
    ASSERT_NE(first_invalid_stack_param(s), nullptr);
    EXPECT_STREQ(first_invalid_stack_param(s)->name, "StackFlags");
    s = default_stack_settings();
    s.caching = 2;
    EXPECT_STREQ(first_invalid_stack_param(s)->name, "StackCaching");
    s = default_stack_settings();
    s.max_depth = 0;
    EXPECT_STREQ(first_invalid_stack_param(s)->name, "MaxStackDepth");
    s.max_depth = kTraceMaxStackFrames + 1;
    EXPECT_STREQ(first_invalid_stack_param(s)->name, "MaxStackDepth");
    s.max_depth = kTraceMaxStackFrames;
    EXPECT_EQ(first_invalid_stack_param(s), nullptr);
}

TEST(StackSettings, BucketCountAndCacheSizeAreClampedNeverRefused) {
    TraceStackInformation s = default_stack_settings();
    const std::pair<uint32_t, uint32_t> buckets[] = {{0, 256}, {255, 256}, {256, 256}, {4096, 4096}, {4097, 4096}};
    for (auto [in, want] : buckets) {
        s.bucket_count = in;
        EXPECT_EQ(first_invalid_stack_param(s), nullptr) << in;
        EXPECT_EQ(clamp_stack_settings(s).bucket_count, want) << in;
    }
    const std::pair<uint64_t, uint64_t> sizes[] = {
        {0, 0x300000}, {1, 0x300000}, {0x400000, 0x400000}, {0x3200001, 0x3200000}};
    for (auto [in, want] : sizes) {
        s.cache_size = in;
        EXPECT_EQ(first_invalid_stack_param(s), nullptr) << in;
        EXPECT_EQ(clamp_stack_settings(s).cache_size, want) << in;
    }
}

}  // namespace
}  // namespace spinlab::locktrace
