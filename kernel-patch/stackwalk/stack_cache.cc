// stackwalk/stack_cache.cc: see stack_cache.h.
#include "stack_cache.h"

namespace spinlab::stackwalk {

namespace {
uint64_t heads_bytes(uint32_t bucket_count) { return (uint64_t(bucket_count) * 4 + 7) & ~uint64_t(7); }
uint32_t pieces_for(uint32_t depth) { return (depth + kPieceFrames - 1) / kPieceFrames; }
}  // namespace

uint32_t clamp_bucket_count(uint32_t requested) {
    if (requested == 0) return kDefaultBucketCount;
    if (requested < kMinBucketCount) return kMinBucketCount;
    return requested > kMaxBucketCount ? kMaxBucketCount : requested;
}

uint64_t clamp_cache_size(uint64_t requested) {
    if (requested == 0) return kDefaultCacheSize;
    if (requested < kMinCacheSize) return kMinCacheSize;
    return requested > kMaxCacheSize ? kMaxCacheSize : requested;
}

// A multiply-xorshift per frame and murmur3's 64-bit finaliser: every bit of every frame reaches
// the low bits, which the bucket's division (hash % bucket_count, as Windows does) uses. (FNV-1a
// over bytes did not: its lowest bit is the parity of the bytes' lowest bits, and stacks of the
// same shape all landed in even buckets.)
uint32_t stack_hash(const uint64_t* frames, uint32_t depth) {
    uint64_t h = depth;
    for (uint32_t i = 0; i < depth; ++i) {
        h = (h ^ frames[i]) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return uint32_t(h);
}

uint64_t stack_cache_bytes(uint32_t bucket_count, uint64_t piece_budget) {
    return heads_bytes(bucket_count) + piece_budget / sizeof(StackPiece) * sizeof(StackPiece);
}

void StackCache::init(void* memory, uint32_t bucket_count, uint64_t piece_budget, uint8_t owner) {
    bucket_count_ = bucket_count ? bucket_count : 1;
    buckets_ = static_cast<uint32_t*>(memory);
    pieces_ = reinterpret_cast<StackPiece*>(static_cast<uint8_t*>(memory) + heads_bytes(bucket_count_));
    uint64_t n = piece_budget / sizeof(StackPiece);
    piece_count_ = n >= kNoPiece ? kNoPiece - 1 : uint32_t(n);
    for (uint32_t b = 0; b < bucket_count_; ++b) buckets_[b] = kNoPiece;
    free_head_ = kNoPiece;
    for (uint32_t i = piece_count_; i-- > 0;) {
        pieces_[i].next_piece = free_head_;
        free_head_ = i;
    }
    free_count_ = piece_count_;
    next_key_ = (uint64_t(owner) << 56) | 1;  // never 0: 0 means "no key" in the events
    counters_ = {};
}

uint32_t StackCache::copy_frames(uint32_t first, uint64_t* out) const {
    uint32_t n = 0;
    for (uint32_t p = first; p != kNoPiece; p = pieces_[p].next_piece)
        for (uint32_t i = 0; i < pieces_[p].count; ++i) out[n++] = pieces_[p].frames[i];
    return n;
}

bool StackCache::same(uint32_t first, uint32_t hash, const uint64_t* frames, uint32_t depth) const {
    if (pieces_[first].hash != hash || pieces_[first].depth != depth) return false;
    uint32_t k = 0;
    for (uint32_t p = first; p != kNoPiece; p = pieces_[p].next_piece)
        for (uint32_t i = 0; i < pieces_[p].count; ++i)
            if (pieces_[p].frames[i] != frames[k++]) return false;
    return true;
}

void StackCache::free_stack(uint32_t first) {
    uint32_t p = first;
    for (;;) {
        uint32_t next = pieces_[p].next_piece;
        pieces_[p].next_piece = free_head_;
        free_head_ = p;
        ++free_count_;
        if (next == kNoPiece) break;
        p = next;
    }
}

LookupResult StackCache::lookup(const uint64_t* frames, uint32_t depth, uint64_t* evicted_frames) {
    LookupResult r{Lookup::kUncached, 0, false, 0, 0};
    if (depth == 0 || depth > kMaxStackDepth) {
        ++counters_.uncached;
        return r;
    }
    const uint32_t hash = stack_hash(frames, depth);
    uint32_t& head = buckets_[hash % bucket_count_];
    // Search the bucket; `prev` trails to unlink a hit (moved to the front) or the tail.
    uint32_t prev = kNoPiece, count = 0;
    for (uint32_t s = head; s != kNoPiece; prev = s, s = pieces_[s].next_stack) {
        ++count;
        if (!same(s, hash, frames, depth)) continue;
        if (prev != kNoPiece) {  // most recently used first
            pieces_[prev].next_stack = pieces_[s].next_stack;
            pieces_[s].next_stack = head;
            head = s;
        }
        ++counters_.hits;
        r.kind = Lookup::kHit;
        r.key = pieces_[s].key;
        return r;
    }
    // A miss. A full bucket gives up its least recently used stack (the tail, `prev`).
    if (count >= kStacksPerBucket) {
        uint32_t before = kNoPiece;
        for (uint32_t s = head; pieces_[s].next_stack != kNoPiece; s = pieces_[s].next_stack) before = s;
        const uint32_t tail = before == kNoPiece ? head : pieces_[before].next_stack;
        r.evicted = true;
        r.evicted_key = pieces_[tail].key;
        r.evicted_depth = copy_frames(tail, evicted_frames);
        if (before == kNoPiece) head = kNoPiece;
        else pieces_[before].next_stack = kNoPiece;
        free_stack(tail);
        ++counters_.evictions;
    }
    const uint32_t need = pieces_for(depth);
    if (need > free_count_) {
        ++counters_.uncached;
        return r;
    }
    // Take `need` pieces from the free list, in frame order.
    uint32_t first = free_head_, p = first;
    for (uint32_t k = 0, done = 0; k < need; ++k) {
        StackPiece& piece = pieces_[p];
        const uint32_t n = depth - done < kPieceFrames ? depth - done : kPieceFrames;
        for (uint32_t i = 0; i < n; ++i) piece.frames[i] = frames[done + i];
        piece.count = uint16_t(n);
        done += n;
        const uint32_t next = piece.next_piece;
        if (k + 1 == need) {
            piece.next_piece = kNoPiece;
            free_head_ = next;
        }
        p = next;
    }
    free_count_ -= need;
    StackPiece& f = pieces_[first];
    f.hash = hash;
    f.depth = uint16_t(depth);
    f.key = next_key_++;
    f.next_stack = head;
    head = first;
    ++counters_.misses;
    r.kind = Lookup::kMiss;
    r.key = f.key;
    return r;
}

}  // namespace spinlab::stackwalk
