#include "thaw_plan.h"

#include <algorithm>
#include <vector>

namespace spinlab::load {

void WriteEstimate::add(uint64_t write_ns) {
    samples_.push_back(write_ns);
    while (samples_.size() > keep_) samples_.pop_front();
}

uint64_t WriteEstimate::median_ns() const {
    if (samples_.empty()) return 0;
    std::vector<uint64_t> s(samples_.begin(), samples_.end());
    std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
    return s[s.size() / 2];
}

uint64_t thaw_lead_ns(const WriteEstimate& thaw_writes, uint64_t length_ns) {
    return std::min(thaw_writes.median_ns(), length_ns / 2);
}

}  // namespace spinlab::load
