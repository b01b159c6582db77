// collector/trace/trace_stacks.h: call stacks rebuilt from a trace (spinlab/trace.h, "call stacks").
//
// Pass 1 (learn): every definition, delete and rundown names a key's frames. Keys are never
// reused within a session, so a key's frames are the same wherever they appear: order does not
// matter, and a definition lost (EventsLost, an overwritten buffer) is recovered from the
// delete or the rundown of the same key. Pass 2 (resolve): a reference becomes its frames, a
// walk carries its own; a reference whose key nothing named is kLost, never guessed.
// Pairing: a CPU writes an event's stack right after the event, with the event's type and TSC
// (StackPairer). Everything read here comes from a trace file, so nothing is trusted: sizes come
// from the buffer parser, and a key named twice with different frames is counted as a conflict
// (the first frames stay). No libdw, no Boost: the fuzzer builds it alone.
#pragma once
#include <spinlab/trace.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace spinlab::collect {

struct ResolvedStack {
    enum class Kind : uint8_t { kResolved, kInline, kLost };
    Kind kind = Kind::kLost;
    uint64_t key = 0;          // 0 for an inline walk
    uint16_t event_type = 0;   // the event it belongs to
    uint64_t event_tsc = 0;
    uint16_t depth = 0;        // as the event says (kLost: frames unknown)
    uint8_t walk_end = 0;      // TraceStackEnd of the kernel part
    uint8_t user_end = 0;
    std::vector<uint64_t> frames;
};

class StackDecoder {
public:
    // Pass 1, every event of the trace (checked by the buffer parser): ev points at its first byte.
    void learn(const TraceEventHeader& h, const uint8_t* ev);
    // Pass 2, a stack-ref or stack-walk event; nullopt for any other type.
    std::optional<ResolvedStack> resolve(const TraceEventHeader& h, const uint8_t* ev) const;

    size_t keys() const { return frames_.size(); }
    uint64_t conflicts() const { return conflicts_; }
    const std::vector<uint64_t>* frames_of(uint64_t key) const;

private:
    std::unordered_map<uint64_t, std::vector<uint64_t>> frames_;
    uint64_t conflicts_ = 0;
};

// Attaches stacks to their events in one CPU-ordered pass: call event() for every event in a
// CPU's buffer order; it returns the stack when `h` is a stack-ref/walk that belongs to the
// previous non-stack event of its CPU (same type and TSC), which `owner` then names.
class StackPairer {
public:
    struct Owner {
        TraceEventHeader header;
        std::vector<uint8_t> bytes;  // the event itself
    };
    // Returns true when h/ev is a stack of the CPU's last event: *owner points at that event.
    bool pair(const TraceEventHeader& h, const uint8_t* ev, const Owner** owner);
    uint64_t orphans() const { return orphans_; }  // stacks whose event was not the one before

private:
    std::unordered_map<uint16_t, Owner> last_;
    uint64_t orphans_ = 0;
};

}  // namespace spinlab::collect
