// collector/trace/trace_stacks_fuzzer.cc: libFuzzer target for the stack decoder (trace_stacks.h): the
// input is the events of one trace buffer (a buffer header is put in front, so most inputs get
// past its checks); whatever the buffer parser accepts is learnt and resolved, and the answers
// must be consistent: a resolved reference has exactly its key's frames, an inline walk its own,
// a lost one none, and a stack pairs only with an event of its CPU, type and TSC.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "locktrace/buffer_parser.h"
#include "trace_stacks.h"

using namespace spinlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < sizeof(TraceEventHeader) || size > (1u << 20)) return 0;
    std::vector<uint8_t> buf(sizeof(TraceBufferHeader) + size);
    TraceBufferHeader bh{};
    TraceEventHeader first;
    std::memcpy(&first, data, sizeof first);
    bh.cpu = first.cpu;
    bh.bytes_used = uint32_t(buf.size());
    // Count the events the way the parser walks them, so event_count is not what stops it.
    for (size_t off = 0; off + sizeof(TraceEventHeader) <= size;) {
        TraceEventHeader h;
        std::memcpy(&h, data + off, sizeof h);
        if (h.size < sizeof h) break;
        off += h.size;
        bh.event_count++;
    }
    std::memcpy(buf.data(), &bh, sizeof bh);
    std::memcpy(buf.data() + sizeof bh, data, size);
    locktrace::BufferView v;
    if (locktrace::parse_buffer(buf.data(), buf.size(), &v) != locktrace::BufferError::kNone) return 0;

    collect::StackDecoder d;
    locktrace::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) { d.learn(h, ev); });
    collect::StackPairer p;
    locktrace::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
        const collect::StackPairer::Owner* owner = nullptr;
        const bool paired = p.pair(h, ev, &owner);
        const auto r = d.resolve(h, ev);
        if (paired) {
            if (!r || owner->header.cpu != h.cpu) __builtin_trap();
            if (owner->header.tsc != r->event_tsc || owner->header.type != r->event_type) __builtin_trap();
        }
        if (!r) return;
        TraceStackEvent e;
        std::memcpy(&e, ev, sizeof e);
        switch (r->kind) {
            case collect::ResolvedStack::Kind::kResolved: {
                const std::vector<uint64_t>* f = d.frames_of(e.key);
                if (!f || *f != r->frames || r->frames.empty()) __builtin_trap();
                break;
            }
            case collect::ResolvedStack::Kind::kInline:
                if (r->frames.size() != e.nframes || h.type != uint16_t(TraceEventType::kStackWalk)) __builtin_trap();
                break;
            case collect::ResolvedStack::Kind::kLost:
                if (!r->frames.empty() || d.frames_of(e.key) != nullptr) __builtin_trap();
                break;
        }
    });
    return 0;
}
