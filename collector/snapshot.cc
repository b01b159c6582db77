// collector/snapshot.cc: see snapshot.h.
#include "snapshot.h"

#include <cstddef>
#include <cstring>

#include "lockstat/perf_record.h"

namespace spinlab::collect {

std::string ClassNames::name(uint32_t id) const {
    if (id < names.size() && !names[id].empty()) return names[id];
    return "class" + std::to_string(id);
}

CpuSnapshot empty_cpu(uint32_t cpu) {
    CpuSnapshot c;
    c.cpu = cpu;
    c.classes.assign(kMaxLockClasses, LockClassPerf{});
    return c;
}

AcquisitionsCounted acquisitions_counted(const Snapshot& s) {
    for (const CpuSnapshot& c : s.cpus)
        if (c.acquisitions_counted == AcquisitionsCounted::kContendedOnly) return c.acquisitions_counted;
    return AcquisitionsCounted::kEveryAcquisition;
}

LockClassPerf merge_cpus(const Snapshot& s, uint32_t class_id) {
    LockClassPerf sum{};
    for (const CpuSnapshot& c : s.cpus)
        if (class_id < c.classes.size()) lockstat::merge_class_perf(sum, c.classes[class_id]);
    return sum;
}

std::vector<uint32_t> active_classes(const Snapshot& s) {
    std::vector<uint32_t> out;
    for (uint32_t id = 0; id < kMaxLockClasses; ++id) {
        bool any = false;
        for (const CpuSnapshot& c : s.cpus)
            any = any || (id < c.classes.size() && c.classes[id].acquisitions != 0);
        if (any) out.push_back(id);
    }
    return out;
}

LockClassPerf class_delta(const LockClassPerf& later, const LockClassPerf& earlier) {
    // Every uint64 field is a count except the two maxima; subtract field by field.
    static_assert(sizeof(LockClassPerf) % sizeof(uint64_t) == 0);
    constexpr size_t n = sizeof(LockClassPerf) / sizeof(uint64_t);
    uint64_t a[n], b[n];
    std::memcpy(a, &later, sizeof a);
    std::memcpy(b, &earlier, sizeof b);
    for (size_t i = 0; i < n; ++i) a[i] -= b[i];
    LockClassPerf d;
    std::memcpy(&d, a, sizeof d);
    d.wait_cycles_max = later.wait_cycles_max;
    d.hold_cycles_max = later.hold_cycles_max;
    return d;
}

bool class_went_backwards(const LockClassPerf& later, const LockClassPerf& earlier) {
    static_assert(sizeof(LockClassPerf) % sizeof(uint64_t) == 0);
    constexpr size_t n = sizeof(LockClassPerf) / sizeof(uint64_t);
    constexpr size_t kWaitMax = offsetof(LockClassPerf, wait_cycles_max) / sizeof(uint64_t);
    constexpr size_t kHoldMax = offsetof(LockClassPerf, hold_cycles_max) / sizeof(uint64_t);
    uint64_t a[n], b[n];
    std::memcpy(a, &later, sizeof a);
    std::memcpy(b, &earlier, sizeof b);
    for (size_t i = 0; i < n; ++i)
        if (i != kWaitMax && i != kHoldMax && a[i] < b[i]) return true;
    return false;
}

PvLockCounters pv_delta(const PvLockCounters& later, const PvLockCounters& earlier) {
    if (later.pv_halts < earlier.pv_halts || later.pv_kicks < earlier.pv_kicks ||
        later.pv_spurious_wakeups < earlier.pv_spurious_wakeups || later.pv_steals < earlier.pv_steals)
        return later;  // reset in between (or nonsense): counting restarted
    PvLockCounters d = later;
    d.pv_halts -= earlier.pv_halts;
    d.pv_kicks -= earlier.pv_kicks;
    d.pv_spurious_wakeups -= earlier.pv_spurious_wakeups;
    d.pv_steals -= earlier.pv_steals;
    return d;
}

Snapshot snapshot_delta(const Snapshot& later, const Snapshot& earlier) {
    Snapshot d = later;
    for (CpuSnapshot& c : d.cpus) {
        const CpuSnapshot* before = nullptr;
        for (const CpuSnapshot& e : earlier.cpus)
            if (e.cpu == c.cpu) before = &e;
        if (before == nullptr || before->resets != c.resets) continue;
        c.pv = pv_delta(c.pv, before->pv);
        for (size_t id = 0; id < c.classes.size() && id < before->classes.size(); ++id) {
            // A count below the earlier one: the class was reset under the same `resets` value
            // (a reset zeroes the counters before it bumps resets) or the guest wrote nonsense.
            // Either way counting restarted: later's counts as they are, never a wrapped delta.
            if (class_went_backwards(c.classes[id], before->classes[id])) continue;
            c.classes[id] = class_delta(c.classes[id], before->classes[id]);
        }
    }
    d.read_cycles = later.read_cycles;
    return d;
}

int64_t wait_invariant_error(const LockClassPerf& c) {
    return int64_t(c.uncontended + lockstat::wait_hist_total(c) + c.wait_overflow -
                   c.acquisitions);
}

}  // namespace spinlab::collect
