// stackwalk/stack_cache_test.cc: the stack cache's rules (ETW's, stack_cache.h): clamping, hits and
// misses, most-recently-used order, eviction of the fifth stack in a bucket with its frames, stacks
// of several pieces, running out of pieces, keys never reused, and the rundown.
#include "stack_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace spinlab::stackwalk {
namespace {

using Frames = std::vector<uint64_t>;

struct Cache {
    std::vector<uint64_t> memory;
    StackCache c;
    Cache(uint32_t buckets, uint32_t pieces, uint8_t owner = 0) {
        const uint64_t budget = uint64_t(pieces) * sizeof(StackPiece);
        memory.resize(stack_cache_bytes(buckets, budget) / 8 + 1);
        c.init(memory.data(), buckets, budget, owner);
    }
    LookupResult look(const Frames& f, Frames* evicted = nullptr) {
        Frames ev(kMaxStackDepth);
        LookupResult r = c.lookup(f.data(), uint32_t(f.size()), ev.data());
        if (evicted) *evicted = Frames(ev.begin(), ev.begin() + (r.evicted ? r.evicted_depth : 0));
        return r;
    }
    std::map<uint64_t, Frames> rundown() const {
        std::map<uint64_t, Frames> out;
        c.rundown([&](uint64_t key, const uint64_t* f, uint32_t n) { out[key] = Frames(f, f + n); });
        return out;
    }
};

// Stacks that all fall in bucket `b` of `buckets`: the k-th one found by search.
Frames in_bucket(uint32_t b, uint32_t buckets, int k, uint32_t depth = 3) {
    for (uint64_t x = 1;; ++x) {
        Frames f(depth);
        for (uint32_t i = 0; i < depth; ++i) f[i] = 0x100000 + x * 16 + i;
        if (stack_hash(f.data(), depth) % buckets == b && k-- == 0) return f;
    }
}

TEST(StackCache, ParametersAreClampedNotRefused) {
    EXPECT_EQ(clamp_bucket_count(0), 256u);
    EXPECT_EQ(clamp_bucket_count(255), 256u);
    EXPECT_EQ(clamp_bucket_count(256), 256u);
    EXPECT_EQ(clamp_bucket_count(257), 257u);  // any count: buckets are hash % count
    EXPECT_EQ(clamp_bucket_count(4096), 4096u);
    EXPECT_EQ(clamp_bucket_count(4097), 4096u);
    EXPECT_EQ(clamp_cache_size(0), 0x300000u);
    EXPECT_EQ(clamp_cache_size(1), 0x300000u);
    EXPECT_EQ(clamp_cache_size(0x400000), 0x400000u);
    EXPECT_EQ(clamp_cache_size(uint64_t(1) << 40), 0x3200000u);
}

TEST(StackCache, FirstUseMissesThenHitsWithTheSameKey) {
    Cache k(256, 64, 3);
    Frames f{0x1000, 0x2000, 0x3000};
    LookupResult a = k.look(f);
    EXPECT_EQ(a.kind, Lookup::kMiss);
    EXPECT_EQ(a.key >> 56, 3u) << "the owner is in the key";
    Cache k0(256, 8, 0);
    EXPECT_NE(k0.look(f).key, 0u) << "0 means no key in the events, even for owner 0's first stack";
    LookupResult b = k.look(f);
    EXPECT_EQ(b.kind, Lookup::kHit);
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(k.look(Frames{0x1000, 0x2000}).kind, Lookup::kMiss) << "a prefix is another stack";
    EXPECT_EQ(k.c.counters().hits, 1u);
    EXPECT_EQ(k.c.counters().misses, 2u);
}

TEST(StackCache, TheFifthStackInABucketEvictsTheLeastRecentlyUsed) {
    Cache k(256, 64);
    std::vector<Frames> s;
    std::vector<uint64_t> keys;
    for (int i = 0; i < 5; ++i) s.push_back(in_bucket(7, 256, i));
    for (int i = 0; i < 4; ++i) keys.push_back(k.look(s[i]).key);
    EXPECT_EQ(k.look(s[0]).kind, Lookup::kHit);  // s0 is now the most recent; s1 the least
    Frames evicted;
    LookupResult r = k.look(s[4], &evicted);
    EXPECT_EQ(r.kind, Lookup::kMiss);
    ASSERT_TRUE(r.evicted);
    EXPECT_EQ(r.evicted_key, keys[1]);
    EXPECT_EQ(evicted, s[1]) << "the delete carries the evicted stack's frames";
    EXPECT_EQ(k.look(s[0]).kind, Lookup::kHit);
    EXPECT_EQ(k.look(s[2]).kind, Lookup::kHit);
    EXPECT_EQ(k.look(s[3]).kind, Lookup::kHit);
    LookupResult again = k.look(s[1], &evicted);  // back, with a NEW key; s4 was least recent
    EXPECT_EQ(again.kind, Lookup::kMiss);
    EXPECT_NE(again.key, keys[1]) << "keys are never reused";
    EXPECT_EQ(evicted, s[4]);
    EXPECT_EQ(k.c.counters().evictions, 2u);
    // Another bucket is not touched.
    EXPECT_EQ(k.look(in_bucket(8, 256, 0)).evicted, false);
}

TEST(StackCache, DeepStacksTakeSeveralPiecesAndComeBackWhole) {
    Cache k(256, 16);
    Frames deep(100);
    for (uint32_t i = 0; i < deep.size(); ++i) deep[i] = 0x400000 + 8 * i;
    LookupResult r = k.look(deep);
    EXPECT_EQ(r.kind, Lookup::kMiss);
    EXPECT_EQ(k.c.free_pieces(), 16u - 4u);  // 100 frames = 4 pieces of 32
    EXPECT_EQ(k.look(deep).kind, Lookup::kHit);
    Frames other = deep;
    other[99] ^= 8;  // differs only in the last piece
    EXPECT_EQ(k.look(other).kind, Lookup::kMiss);
    auto all = k.rundown();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[r.key], deep);
}

TEST(StackCache, WithoutFreePiecesAStackIsUncachedAndEvictionsFreeTheirPieces) {
    Cache k(256, 3);
    Frames big(70, 0);  // 3 pieces
    for (uint32_t i = 0; i < big.size(); ++i) big[i] = 0x500000 + i;
    EXPECT_EQ(k.look(big).kind, Lookup::kMiss);
    EXPECT_EQ(k.look(Frames{1, 2}).kind, Lookup::kUncached);
    EXPECT_EQ(k.c.counters().uncached, 1u);
    EXPECT_EQ(k.look(Frames(kMaxStackDepth + 1, 9)).kind, Lookup::kUncached) << "too deep";
    EXPECT_EQ(k.look(Frames{}).kind, Lookup::kUncached) << "empty";
    // Fill one bucket with 1-piece stacks in a fresh cache of 4 pieces; the fifth evicts one and
    // reuses its piece.
    Cache m(256, 4);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(m.look(in_bucket(1, 256, i)).kind, Lookup::kMiss);
    EXPECT_EQ(m.c.free_pieces(), 0u);
    LookupResult r = m.look(in_bucket(1, 256, 4));
    EXPECT_EQ(r.kind, Lookup::kMiss);
    EXPECT_TRUE(r.evicted);
    EXPECT_EQ(m.c.free_pieces(), 0u);
}

TEST(StackCache, RundownListsEveryCachedStackOnce) {
    Cache k(256, 64);
    std::map<uint64_t, Frames> want;
    for (int i = 0; i < 6; ++i) {  // six in one bucket (two evicted) and three elsewhere
        Frames f = in_bucket(9, 256, i);
        LookupResult r = k.look(f);
        want[r.key] = f;
        if (r.evicted) want.erase(r.evicted_key);
    }
    for (int i = 0; i < 3; ++i) {
        Frames f = in_bucket(10 + i, 256, 0, 40);
        want[k.look(f).key] = f;
    }
    EXPECT_EQ(k.rundown(), want);
    EXPECT_EQ(want.size(), 7u);
}

TEST(StackCache, StacksOfOneShapeReachEveryBucket) {
    // Return addresses of one program differ in few bits; the buckets must still all be used.
    for (uint32_t buckets : {256u, 257u, 4096u})
        for (uint32_t depth : {1u, 2u, 40u}) {
            std::vector<int> used(buckets, 0);
            Frames f(depth);
            for (uint64_t x = 0; x < 16 * buckets; ++x) {
                for (uint32_t i = 0; i < depth; ++i) f[i] = 0x100000 + x * 16 + i;
                used[stack_hash(f.data(), depth) % buckets] = 1;
            }
            int n = 0;
            for (int u : used) n += u;
            EXPECT_EQ(n, int(buckets)) << buckets << " buckets, depth " << depth;
        }
}

TEST(StackCache, HashUsesEveryFrame) {
    Frames a{1, 2, 3}, b{1, 2, 4};
    EXPECT_NE(stack_hash(a.data(), 3), stack_hash(b.data(), 3));
    EXPECT_NE(stack_hash(a.data(), 3), stack_hash(a.data(), 2));
}

}  // namespace
}  // namespace spinlab::stackwalk
