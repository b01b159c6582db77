// stackwalk/frame_walk.cc: see frame_walk.h.
#include "frame_walk.h"

namespace spinlab::stackwalk {

const char* walk_end_name(WalkEnd e) {
    switch (e) {
        case WalkEnd::kEnd: return "end";
        case WalkEnd::kMaxDepth: return "max-depth";
        case WalkEnd::kBadFrame: return "bad-frame";
        case WalkEnd::kFault: return "fault";
    }
    return "?";
}

WalkResult walk_frames(uint64_t rip, uint64_t rbp, StackBounds bounds, ReadWord read, void* ctx,
                       uint64_t* frames, uint32_t max_depth) {
    uint32_t n = 0;
    if (max_depth == 0) return {0, WalkEnd::kMaxDepth};
    frames[n++] = rip;
    uint64_t last = 0;
    for (;;) {
        if (rbp == 0) return {n, WalkEnd::kEnd};
        // A frame holds two words inside the stack, 8-byte aligned, above the previous frame.
        if ((rbp & 7) != 0 || bounds.hi < 16 || rbp < bounds.lo || rbp > bounds.hi - 16 || rbp <= last)
            return {n, WalkEnd::kBadFrame};
        uint64_t saved_rbp = 0, ret = 0;
        if (!read(ctx, rbp, &saved_rbp) || !read(ctx, rbp + 8, &ret)) return {n, WalkEnd::kFault};
        if (ret == 0) return {n, WalkEnd::kEnd};
        if (n == max_depth) return {n, WalkEnd::kMaxDepth};
        frames[n++] = ret;
        last = rbp;
        rbp = saved_rbp;
    }
}

}  // namespace spinlab::stackwalk
