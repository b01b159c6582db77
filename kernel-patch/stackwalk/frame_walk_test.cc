// stackwalk/frame_walk_test.cc: walks over a fake stack: a whole chain, each way a walk stops.
#include "frame_walk.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace spinlab::stackwalk {
namespace {

// A stack of 8-byte words at [base, base + 8 * words.size()); reads outside fail, and so does
// any address in `unreadable`.
struct FakeStack {
    uint64_t base = 0x7000;
    std::map<uint64_t, uint64_t> words;
    std::vector<uint64_t> unreadable;
    int reads = 0;
    // Frame at `at`: saved rbp, return address.
    void frame(uint64_t at, uint64_t saved_rbp, uint64_t ret) {
        words[at] = saved_rbp;
        words[at + 8] = ret;
    }
    static bool read(void* ctx, uint64_t addr, uint64_t* out) {
        auto* s = static_cast<FakeStack*>(ctx);
        ++s->reads;
        for (uint64_t u : s->unreadable)
            if (u == addr) return false;
        auto it = s->words.find(addr);
        if (it == s->words.end()) return false;
        *out = it->second;
        return true;
    }
};

constexpr StackBounds kBounds{0x7000, 0x8000};

std::vector<uint64_t> walk(FakeStack& s, uint64_t rbp, uint32_t max, WalkEnd* end) {
    std::vector<uint64_t> frames(max + 1, 0xDEAD);
    WalkResult r = walk_frames(0x1000, rbp, kBounds, FakeStack::read, &s, frames.data(), max);
    EXPECT_EQ(frames[max], 0xDEADu) << "wrote past max_depth";
    frames.resize(r.depth);
    *end = r.end;
    return frames;
}

TEST(FrameWalk, FollowsTheChainToTheOutermostFrame) {
    FakeStack s;
    s.frame(0x7100, 0x7200, 0x2000);
    s.frame(0x7200, 0x7300, 0x3000);
    s.frame(0x7300, 0, 0x4000);  // the outermost frame: saved rbp 0
    WalkEnd end;
    EXPECT_EQ(walk(s, 0x7100, 32, &end), (std::vector<uint64_t>{0x1000, 0x2000, 0x3000, 0x4000}));
    EXPECT_EQ(end, WalkEnd::kEnd);
    s.frame(0x7300, 0x7400, 0);  // a zero return address ends it too
    EXPECT_EQ(walk(s, 0x7100, 32, &end), (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
    EXPECT_EQ(end, WalkEnd::kEnd);
}

TEST(FrameWalk, StopsAtMaxDepthWithoutWritingPastIt) {
    FakeStack s;
    for (uint64_t at = 0x7000; at < 0x7f00; at += 0x10) s.frame(at, at + 0x10, 0x5000 + at);
    WalkEnd end;
    EXPECT_EQ(walk(s, 0x7000, 8, &end).size(), 8u);
    EXPECT_EQ(end, WalkEnd::kMaxDepth);
    EXPECT_EQ(walk(s, 0x7000, 1, &end), (std::vector<uint64_t>{0x1000}));
    EXPECT_EQ(end, WalkEnd::kMaxDepth);
}

TEST(FrameWalk, ABadFrameStopsTheWalkAndSaysSo) {
    FakeStack s;
    WalkEnd end;
    s.frame(0x7100, 0x7100, 0x2000);  // points at itself: would loop
    EXPECT_EQ(walk(s, 0x7100, 32, &end), (std::vector<uint64_t>{0x1000, 0x2000}));
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    s.frame(0x7100, 0x7080, 0x2000);  // goes down the stack
    walk(s, 0x7100, 32, &end);
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    s.frame(0x7100, 0x7204, 0x2000);  // misaligned
    walk(s, 0x7100, 32, &end);
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    s.frame(0x7100, 0x9000, 0x2000);  // leaves the stack
    walk(s, 0x7100, 32, &end);
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    s.frame(0x7100, 0x7ff8, 0x2000);  // the frame's second word would lie past the top
    walk(s, 0x7100, 32, &end);
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    const int reads = s.reads;
    EXPECT_EQ(walk(s, 0x6ff0, 32, &end), (std::vector<uint64_t>{0x1000}));  // below the stack
    EXPECT_EQ(end, WalkEnd::kBadFrame);
    EXPECT_EQ(s.reads, reads) << "a frame outside the bounds is never read";
}

TEST(FrameWalk, AnUnreadableFrameIsAFault) {
    FakeStack s;
    s.frame(0x7100, 0x7200, 0x2000);
    s.frame(0x7200, 0x7300, 0x3000);
    s.unreadable.push_back(0x7208);
    WalkEnd end;
    EXPECT_EQ(walk(s, 0x7100, 32, &end), (std::vector<uint64_t>{0x1000, 0x2000}));
    EXPECT_EQ(end, WalkEnd::kFault);
    EXPECT_STREQ(walk_end_name(end), "fault");
}

TEST(FrameWalk, ZeroFramePointerIsALeafWithNoCallers) {
    FakeStack s;
    WalkEnd end;
    EXPECT_EQ(walk(s, 0, 32, &end), (std::vector<uint64_t>{0x1000}));
    EXPECT_EQ(end, WalkEnd::kEnd);
}

}  // namespace
}  // namespace spinlab::stackwalk
