// lockstat/log2_bucket.h: which log2 bucket a cycle count falls in (the index of its
// most significant bit, as x86's `bsr` gives it).
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

namespace spinlab::lockstat {

// Index of the most significant set bit: v in [2^k, 2^(k+1)) -> k. bsr leaves 0 undefined;
// a 0-cycle wait goes in bucket 0 with 1, so bucket 0 holds [0, 2). Compiles to bsr/lzcnt.
constexpr uint32_t log2_bucket(uint64_t v) {
    return v == 0 ? 0u : 63u - static_cast<uint32_t>(__builtin_clzll(v));
}
static_assert(log2_bucket(0) == 0 && log2_bucket(1) == 0 && log2_bucket(2) == 1);
static_assert(log2_bucket(~0ull) == kHistBuckets - 1, "every uint64 has a bucket");

// The smallest value bucket k holds (0 for bucket 0, else 2^k).
constexpr uint64_t log2_bucket_floor(uint32_t k) {
    return k == 0 ? 0 : (1ull << k);
}

}  // namespace spinlab::lockstat
