// collector/snapshot.h: one reading of every CPU's lock counters, and what the collector
// computes from readings: CPU merges (lockstat's merge_class_perf) and interval deltas.
// The counts come from the guest and are not trusted: they are numbers, never an index or a
// size, and every formatter takes any value (a percentage of a total of 0 is 0).
#pragma once
#include <spinlab/perfdata.h>

#include <cstdint>
#include <string>
#include <vector>

namespace spinlab::collect {

struct CpuSnapshot {
    uint32_t cpu = 0;
    uint64_t resets = 0;                 // CpuPerfData.resets when read
    uint32_t apic_id = 0;                // CpuPerfData.apic_id (valid once the CPU's init ran)
    bool initialised = false;            // the CPU's lockstat init has run (magic is set)
    std::vector<LockClassPerf> classes;  // kMaxLockClasses entries, index = class id
    PvLockCounters pv{};                 // CpuPerfData.pv: lock=pvqspin's halts, kicks, ...
    // CpuPerfData.acquisitions_counted, checked by the reader: what `acquisitions` counts.
    AcquisitionsCounted acquisitions_counted = AcquisitionsCounted::kEveryAcquisition;
};

struct Snapshot {
    uint64_t host_ns = 0;    // CLOCK_REALTIME when the reading began
    uint64_t host_tsc = 0;   // host TSC when the reading began
    uint64_t read_cycles = 0;  // host TSC cycles the reading took
    std::vector<CpuSnapshot> cpus;
};

// Lock class names by id ("class7" where the guest did not say).
struct ClassNames {
    std::vector<std::string> names;
    std::string name(uint32_t id) const;
};

// A CpuSnapshot with every class zeroed.
CpuSnapshot empty_cpu(uint32_t cpu);

// The class summed over every CPU.
LockClassPerf merge_cpus(const Snapshot& s, uint32_t class_id);

// What the snapshot's acquisitions count: contended-only when any CPU says so (a guest that sees
// only slow-path waits says it on every CPU), so a table of the merged CPUs never calls such
// counts "all acquisitions".
AcquisitionsCounted acquisitions_counted(const Snapshot& s);

// Class ids with at least one acquisition on some CPU, ascending.
std::vector<uint32_t> active_classes(const Snapshot& s);

// later - earlier for counts and histograms; maxima are later's (a maximum has no delta).
// The pv lock's per-CPU counters (CpuSnapshot::pv) likewise (pv_delta).
// A CPU whose `resets` changed in between contributes later's counts as they are (counting
// restarted from zero at the reset), and so does a class with any count below the earlier one
// (class_went_backwards: a reset seen before its `resets` bump, or a guest writing nonsense;
// a delta never wraps). CPUs are matched by number; one missing from `earlier` counts from zero.
Snapshot snapshot_delta(const Snapshot& later, const Snapshot& earlier);
LockClassPerf class_delta(const LockClassPerf& later, const LockClassPerf& earlier);
// Whether any count (every field but the two maxima) of later is below earlier's.
bool class_went_backwards(const LockClassPerf& later, const LockClassPerf& earlier);

// later - earlier of the pv lock's counters; later's as they are when any went backwards.
PvLockCounters pv_delta(const PvLockCounters& later, const PvLockCounters& earlier);

// uncontended + sum(wait_hist) + wait_overflow - acquisitions: 0 when the invariant holds,
// nonzero (by how much it is off) on a snapshot taken while records were in flight.
int64_t wait_invariant_error(const LockClassPerf& c);

}  // namespace spinlab::collect
