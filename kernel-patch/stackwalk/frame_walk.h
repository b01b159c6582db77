// stackwalk/frame_walk.h: a call stack by frame pointers, bounded and fault-safe.
//
// With -fno-omit-frame-pointer every function's prologue pushes the caller's %rbp and points
// %rbp at it, so the frames form a chain on the stack:
//
//        higher addresses
//      | return address  |  [rbp + 8]: where the function returns to, in its caller
//      | saved rbp       |  [rbp]    : the caller's frame, further up
//        lower addresses
//
// The walk starts from a given (rip, rbp) and follows the chain. It never trusts the stack:
// every read goes through the caller's `read` function, which says whether the 8 bytes could
// be read (the kernel's checked copy for a user stack, a range check for a kernel stack), and
// a frame must lie inside [lo, hi) and above the previous one, so a corrupt chain cannot loop
// or leave the stack. Why it stopped is part of the result. Pure: no kernel, no libc.
#pragma once

#include <stdint.h>

namespace spinlab::stackwalk {

enum class WalkEnd : uint8_t {
    kEnd = 0,        // a zero frame pointer or return address: the outermost frame
    kMaxDepth = 1,   // the frames array is full
    kBadFrame = 2,   // a frame pointer outside [lo, hi), misaligned, or not above the last one
    kFault = 3,      // `read` could not read a frame
};
const char* walk_end_name(WalkEnd e);

// Reads 8 bytes at addr into *out; false if it cannot (unmapped, not allowed).
using ReadWord = bool (*)(void* ctx, uint64_t addr, uint64_t* out);

struct StackBounds {
    uint64_t lo;  // the stack's lowest address (frames live in [lo, hi))
    uint64_t hi;
};

struct WalkResult {
    uint32_t depth;  // frames written, frames[0] = rip
    WalkEnd end;
};

// Writes rip and then each return address, at most max_depth (>= 1) in all.
WalkResult walk_frames(uint64_t rip, uint64_t rbp, StackBounds bounds, ReadWord read, void* ctx,
                       uint64_t* frames, uint32_t max_depth);

}  // namespace spinlab::stackwalk
