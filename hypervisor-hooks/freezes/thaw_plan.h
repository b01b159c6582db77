// When to ask for a thaw so that a freeze lasts what was asked. A thread is marked frozen when
// the freeze write returns and runs again when the thaw write returns (v1 patches the kernel's
// freezer static key before it thaws the tasks; v2 thaws inside the write too), so a thaw asked
// for `length` after the mark leaves the thread frozen for `length` plus the thaw write. The
// injector asks that much earlier: by the median of the thaw writes measured so far (a
// calibration on an empty cgroup before the first freeze, then this run's own writes), never by
// more than half the window. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace spinlab::load {

class WriteEstimate {
public:
    // `keep`: how many of the latest writes the median is taken over.
    explicit WriteEstimate(size_t keep = 9) : keep_(keep) {}
    void add(uint64_t write_ns);
    // The median of the kept writes (the upper one of an even count); 0 before any.
    uint64_t median_ns() const;
    size_t count() const { return samples_.size(); }

private:
    size_t keep_;
    std::deque<uint64_t> samples_;
};

// How long before `marked + length` to ask for the thaw: the estimated thaw write, at most
// half of `length`.
uint64_t thaw_lead_ns(const WriteEstimate& thaw_writes, uint64_t length_ns);

}  // namespace spinlab::load
