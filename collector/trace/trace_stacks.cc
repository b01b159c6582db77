// collector/trace/trace_stacks.cc: see trace_stacks.h.
#include "trace_stacks.h"

#include <cstring>

namespace spinlab::collect {
namespace {

TraceStackEvent load(const uint8_t* ev) {
    TraceStackEvent e;
    std::memcpy(&e, ev, sizeof e);
    return e;
}

std::vector<uint64_t> frames_in(const TraceStackEvent& e, const uint8_t* ev) {
    std::vector<uint64_t> f(e.nframes);
    if (e.nframes) std::memcpy(f.data(), ev + sizeof e, 8 * size_t(e.nframes));
    return f;
}

bool is(const TraceEventHeader& h, TraceEventType t) { return h.type == uint16_t(t); }

}  // namespace

void StackDecoder::learn(const TraceEventHeader& h, const uint8_t* ev) {
    if (!is(h, TraceEventType::kStackDefinition) && !is(h, TraceEventType::kStackDelete) &&
        !is(h, TraceEventType::kStackRundown))
        return;
    const TraceStackEvent e = load(ev);
    if (e.key == 0 || e.nframes == 0) return;  // nothing a reference could use
    std::vector<uint64_t> f = frames_in(e, ev);
    auto [it, fresh] = frames_.try_emplace(e.key, std::move(f));
    if (!fresh && it->second != frames_in(e, ev)) conflicts_++;
}

const std::vector<uint64_t>* StackDecoder::frames_of(uint64_t key) const {
    auto it = frames_.find(key);
    return it == frames_.end() ? nullptr : &it->second;
}

std::optional<ResolvedStack> StackDecoder::resolve(const TraceEventHeader& h, const uint8_t* ev) const {
    const bool ref = is(h, TraceEventType::kStackReference), walk = is(h, TraceEventType::kStackWalk);
    if (!ref && !walk) return std::nullopt;
    const TraceStackEvent e = load(ev);
    ResolvedStack r;
    r.key = e.key;
    r.event_type = e.event_type;
    r.event_tsc = e.event_tsc;
    r.depth = e.depth;
    r.walk_end = e.walk_end;
    r.user_end = e.user_end;
    if (walk) {
        r.kind = ResolvedStack::Kind::kInline;
        r.frames = frames_in(e, ev);
    } else if (const std::vector<uint64_t>* f = frames_of(e.key)) {
        r.kind = ResolvedStack::Kind::kResolved;
        r.frames = *f;
    } else {
        r.kind = ResolvedStack::Kind::kLost;
    }
    return r;
}

bool StackPairer::pair(const TraceEventHeader& h, const uint8_t* ev, const Owner** owner) {
    const bool stack = is(h, TraceEventType::kStackReference) || is(h, TraceEventType::kStackWalk);
    if (!stack) {
        // Definitions, deletes, rundowns and counters belong to no event; they sit between an
        // event and its reference, so they do not replace the CPU's last event.
        if (trace_event_has_frames(h.type) || is(h, TraceEventType::kStackCacheCounters)) return false;
        Owner& o = last_[h.cpu];
        o.header = h;
        o.bytes.assign(ev, ev + h.size);
        return false;
    }
    const TraceStackEvent e = load(ev);
    auto it = last_.find(h.cpu);
    if (it == last_.end() || it->second.header.type != e.event_type || it->second.header.tsc != e.event_tsc) {
        orphans_++;
        return false;
    }
    *owner = &it->second;
    return true;
}

}  // namespace spinlab::collect
