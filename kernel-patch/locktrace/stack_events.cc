// locktrace/stack_events.cc: see stack_events.h.
#include "stack_events.h"

#include "../lockstat/counter.h"

namespace spinlab::locktrace {

namespace {

// One stack event; frames may be null (nframes 0). False: lost (counted by the writer).
bool write_stack_event(const StackEventContext& c, TraceEventType type, uint64_t key,
                       uint16_t event_type, uint64_t event_tsc, uint32_t depth, uint8_t walk_end,
                       uint8_t user_end, const uint64_t* frames, uint32_t nframes, uint64_t tsc) {
    const uint32_t size = stack_walk_bytes(nframes);
    auto* e = static_cast<TraceStackEvent*>(begin_write(*c.writer, size));
    if (!e) return false;
    fill_header(e->h, uint16_t(size), type, c.cpu, c.thread_id, c.process_id, tsc);
    e->key = key;
    e->event_tsc = event_tsc;
    e->event_type = event_type;
    e->depth = uint16_t(depth);
    e->nframes = uint16_t(nframes);
    e->walk_end = walk_end;
    e->user_end = user_end;
    __builtin_memcpy(reinterpret_cast<uint8_t*>(e) + sizeof *e, frames, 8 * nframes);
    end_write(*c.writer, size, tsc);
    return true;
}

}  // namespace

void write_event_stack(const StackEventContext& c, const StackSample& s, uint16_t event_type,
                       uint64_t event_tsc) {
    if (s.depth == 0 || s.depth > kTraceMaxStackFrames) return;
    TraceCpuControl* ctl = c.writer->ctl;
    if (s.walk_end == uint8_t(TraceStackEnd::kBadFrame) || s.walk_end == uint8_t(TraceStackEnd::kFault) ||
        s.user_end == uint8_t(TraceStackEnd::kBadFrame) || s.user_end == uint8_t(TraceStackEnd::kFault))
        lockstat::counter_inc(&ctl->stack_walks_stopped);
    stackwalk::LookupResult r{stackwalk::Lookup::kUncached, 0, false, 0, 0};
    if (c.cache) r = c.cache->lookup(s.frames, s.depth, c.scratch);
    if (r.evicted) {
        lockstat::counter_inc(&ctl->stack_evictions);
        if (write_stack_event(c, TraceEventType::kStackDelete, r.evicted_key, 0, 0, r.evicted_depth,
                              0, 0, c.scratch, r.evicted_depth, event_tsc))
            lockstat::counter_inc(&ctl->stack_deletes_written);
    }
    switch (r.kind) {
        case stackwalk::Lookup::kMiss:
            lockstat::counter_inc(&ctl->stack_misses);
            if (write_stack_event(c, TraceEventType::kStackDefinition, r.key, 0, 0, s.depth,
                                  s.walk_end, s.user_end, s.frames, s.depth, event_tsc))
                lockstat::counter_inc(&ctl->stack_definitions_written);
            [[fallthrough]];
        case stackwalk::Lookup::kHit:
            if (r.kind == stackwalk::Lookup::kHit) lockstat::counter_inc(&ctl->stack_hits);
            write_stack_event(c, TraceEventType::kStackReference, r.key, event_type, event_tsc,
                              s.depth, s.walk_end, s.user_end, nullptr, 0, event_tsc);
            return;
        case stackwalk::Lookup::kUncached:
            if (c.cache) lockstat::counter_inc(&ctl->stack_uncached);
            write_stack_event(c, TraceEventType::kStackWalk, 0, event_type, event_tsc, s.depth,
                              s.walk_end, s.user_end, s.frames, s.depth, event_tsc);
            return;
    }
}

void write_stack_rundown(const StackEventContext& c, uint64_t tsc) {
    TraceCpuControl* ctl = c.writer->ctl;
    if (c.cache)
        c.cache->rundown([&](uint64_t key, const uint64_t* frames, uint32_t depth) {
            if (write_stack_event(c, TraceEventType::kStackRundown, key, 0, 0, depth, 0, 0, frames,
                                  depth, tsc))
                lockstat::counter_inc(&ctl->stack_rundowns_written);
        });
    constexpr uint32_t size = sizeof(TraceStackCountersEvent);
    auto* e = static_cast<TraceStackCountersEvent*>(begin_write(*c.writer, size));
    if (!e) return;
    fill_header(e->h, size, TraceEventType::kStackCacheCounters, c.cpu, c.thread_id, c.process_id, tsc);
    e->hits = ctl->stack_hits;
    e->misses = ctl->stack_misses;
    e->uncached = ctl->stack_uncached;
    e->evictions = ctl->stack_evictions;
    e->definitions_written = ctl->stack_definitions_written;
    e->deletes_written = ctl->stack_deletes_written;
    e->rundowns_written = ctl->stack_rundowns_written;
    e->walks_stopped = ctl->stack_walks_stopped;
    end_write(*c.writer, size, tsc);
}

}  // namespace spinlab::locktrace
