// lockstat/perf_record.cc: see perf_record.h.
#include "perf_record.h"

namespace spinlab::lockstat {

void init_cpu_perf(CpuPerfData& p, uint32_t cpu, uint32_t acquire_sample_rate,
                   AcquisitionsCounted counted) {
    __builtin_memset(&p, 0, sizeof p);
    p.acquisitions_counted = uint32_t(counted);
    p.magic = kPerfDataMagic;
    p.version = kPerfDataVersion;
    p.cpu = cpu;
    p.size = sizeof(CpuPerfData);
    p.acquire_sample_countdown = acquire_sample_rate ? acquire_sample_rate : 1u;
}

void merge_class_perf(LockClassPerf& into, const LockClassPerf& from) {
    into.acquisitions += counter_read(&from.acquisitions);
    into.uncontended += counter_read(&from.uncontended);
    into.wait_overflow += counter_read(&from.wait_overflow);
    into.wait_cycles_sum += counter_read(&from.wait_cycles_sum);
    const uint64_t wmax = counter_read(&from.wait_cycles_max);
    if (wmax > into.wait_cycles_max) into.wait_cycles_max = wmax;
    into.holds_timed += counter_read(&from.holds_timed);
    into.hold_overflow += counter_read(&from.hold_overflow);
    into.hold_cycles_sum += counter_read(&from.hold_cycles_sum);
    const uint64_t hmax = counter_read(&from.hold_cycles_max);
    if (hmax > into.hold_cycles_max) into.hold_cycles_max = hmax;
    into.long_holds += counter_read(&from.long_holds);
    for (uint32_t i = 0; i < kLhpClassCount; i++) {
        into.lhp_count[i] += counter_read(&from.lhp_count[i]);
        into.lhp_cycles[i] += counter_read(&from.lhp_cycles[i]);
    }
    for (uint32_t k = 0; k < kHistBuckets; k++) {
        into.wait_hist[k] += counter_read(&from.wait_hist[k]);
        into.hold_hist[k] += counter_read(&from.hold_hist[k]);
    }
}

void reset_class_perf(LockClassPerf& c) {
    // Field by field with aligned stores, so a concurrent reader never sees a torn value.
    uint64_t* w = reinterpret_cast<uint64_t*>(&c);
    for (size_t i = 0; i < sizeof c / sizeof(uint64_t); i++) counter_set(&w[i], 0);
}

void reset_cpu_perf(CpuPerfData& p, uint32_t lock_class) {
    if (lock_class != kAllLockClasses) {
        if (lock_class < kMaxLockClasses) reset_class_perf(p.classes[lock_class]);
    } else {
        for (uint32_t i = 0; i < kMaxLockClasses; i++) reset_class_perf(p.classes[i]);
        // The pv lock's counters are per CPU, not per class: a reset of every class zeroes them.
        uint64_t* w = reinterpret_cast<uint64_t*>(&p.pv);
        for (size_t i = 0; i < sizeof p.pv / sizeof(uint64_t); i++) counter_set(&w[i], 0);
    }
    counter_inc(&p.resets);
}

uint64_t wait_hist_total(const LockClassPerf& c) {
    uint64_t t = 0;
    for (uint32_t k = 0; k < kHistBuckets; k++) t += counter_read(&c.wait_hist[k]);
    return t;
}

uint64_t hold_hist_total(const LockClassPerf& c) {
    uint64_t t = 0;
    for (uint32_t k = 0; k < kHistBuckets; k++) t += counter_read(&c.hold_hist[k]);
    return t;
}

bool wait_invariant_holds(const LockClassPerf& c) {
    return counter_read(&c.uncontended) + wait_hist_total(c) + counter_read(&c.wait_overflow) ==
           counter_read(&c.acquisitions);
}

}  // namespace spinlab::lockstat
