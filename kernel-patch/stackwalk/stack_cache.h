// stackwalk/stack_cache.h: the stack cache of Windows' kernel logger (ETW's "Stack Caching"),
// so that an event carries an 8-byte stack key instead of its frames.
//
//   buckets[hash % bucket_count] -> stack -> stack -> ... (at most 4, most recently used first)
//   a stack = a chain of pieces of 32 frames each, taken from a free list made up front
//
// Lookup of a stack (its frames):
//   hit   it is in its bucket: it moves to the front; the event carries its key.
//   miss  it is put at the front with a new key; the caller writes its DEFINITION (key and
//         frames) before the event. A fifth stack in the bucket evicts the last one, and the
//         caller writes a DELETE for it (key and frames, so a reader that lost the definition
//         can still resolve the references before the delete).
//   uncached  too few free pieces for it (after the eviction): the event carries its frames.
// At the end of a session the caller writes a RUNDOWN of every cached stack (rundown()).
//
// Keys are never reused and never 0: (owner << 56) | sequence number from 1, so a reference can only ever resolve
// to the stack it was made for, even across lost events. Parameters are clamped, not refused,
// as Windows does: BucketCount 256 (default and minimum) to 4096; CacheSize in bytes, 3 MB
// (default and minimum) to 50 MB: the session's budget for pieces, shared out among the CPUs'
// caches. The memory is the caller's (stack_cache_bytes() says how much); nothing is allocated
// here. One cache per owner (a CPU): no lock for the instrumentation to add, and each CPU's
// events reference only its own cache, so a reader needs no order across CPUs; the price is a
// stack seen on two CPUs is cached twice. Pure: no kernel, no libc.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace spinlab::stackwalk {

constexpr uint32_t kPieceFrames = 32;
constexpr uint32_t kStacksPerBucket = 4;
constexpr uint32_t kMinBucketCount = 256, kMaxBucketCount = 4096, kDefaultBucketCount = 256;
constexpr uint64_t kMinCacheSize = 0x300000, kMaxCacheSize = 0x3200000, kDefaultCacheSize = 0x300000;
constexpr uint32_t kMaxStackDepth = 256;
constexpr uint32_t kNoPiece = 0xFFFFFFFFu;

uint32_t clamp_bucket_count(uint32_t requested);  // 0 means the default
uint64_t clamp_cache_size(uint64_t requested);    // 0 means the default

uint32_t stack_hash(const uint64_t* frames, uint32_t depth);

struct StackPiece {
    uint32_t next_piece;  // the stack's next 32 frames, or kNoPiece
    uint32_t next_stack;  // first piece only: the next stack in the bucket, or kNoPiece
    uint32_t hash;        // first piece only
    uint16_t depth;       // first piece only: the stack's frames in all
    uint16_t count;       // frames in this piece
    uint64_t key;         // first piece only
    uint64_t frames[kPieceFrames];
};

// Bytes one cache needs: the bucket heads, and as many pieces as `piece_budget` bytes hold.
uint64_t stack_cache_bytes(uint32_t bucket_count, uint64_t piece_budget);

enum class Lookup : uint8_t { kHit, kMiss, kUncached };

struct LookupResult {
    Lookup kind;
    uint64_t key;           // kHit, kMiss: the stack's key
    bool evicted;           // a stack was evicted to make room (the caller writes its delete)
    uint64_t evicted_key;
    uint32_t evicted_depth;
};

struct StackCacheCounters {
    uint64_t hits, misses, uncached, evictions;
};

class StackCache {
public:
    // `memory`: stack_cache_bytes(bucket_count, piece_budget) bytes, 8-byte aligned; bucket_count
    // >= 1 (the session clamps it). `owner` goes in the keys' top 8 bits (a CPU number).
    void init(void* memory, uint32_t bucket_count, uint64_t piece_budget, uint8_t owner);

    // depth 1..kMaxStackDepth. On an eviction, the evicted stack's frames are copied to
    // evicted_frames (room for kMaxStackDepth) before its pieces are reused.
    LookupResult lookup(const uint64_t* frames, uint32_t depth, uint64_t* evicted_frames);

    // Every cached stack, bucket by bucket, most recently used first: fn(ctx, key, frames, depth).
    template <typename Fn>
    void rundown(Fn&& fn) const {
        uint64_t frames[kMaxStackDepth];
        for (uint32_t b = 0; b < bucket_count_; ++b)
            for (uint32_t s = buckets_[b]; s != kNoPiece; s = pieces_[s].next_stack)
                fn(pieces_[s].key, frames, copy_frames(s, frames));
    }

    const StackCacheCounters& counters() const { return counters_; }
    uint32_t bucket_count() const { return bucket_count_; }
    uint32_t piece_count() const { return piece_count_; }
    uint32_t free_pieces() const { return free_count_; }

private:
    uint32_t copy_frames(uint32_t first, uint64_t* out) const;
    bool same(uint32_t first, uint32_t hash, const uint64_t* frames, uint32_t depth) const;
    void free_stack(uint32_t first);

    uint32_t* buckets_ = nullptr;  // first piece of the bucket's most recently used stack
    StackPiece* pieces_ = nullptr;
    uint32_t bucket_count_ = 0, piece_count_ = 0;
    uint32_t free_head_ = kNoPiece, free_count_ = 0;
    uint64_t next_key_ = 0;
    StackCacheCounters counters_{};
};

}  // namespace spinlab::stackwalk
