// experiments/runner/results.h: results/<run-id>/ as analysis/README.md defines it (format 1):
// spec.ini, meta.json, status.json, snapshots/<phase>-r<rep>.json, timeline.csv, clock.json,
// halts.csv.
// The JSON texts are built by pure functions (tested against the contract); files are written
// whole to a temporary name and renamed, so a reader (or a crash) never sees half a file.
#pragma once
#include <spinlab/perfdata.h>
#include <spinlab/trace.h>
#include <spinlab/sysinfo.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clock_sampler.h"
#include "clock_sync.h"
#include "halt_log.h"
#include "hostlib/json_writer.h"
#include "snapshot.h"

namespace spinlab::run {

inline constexpr int kResultsFormat = 1;

struct Stamp {
    std::optional<uint64_t> guest_tsc;
    std::string wall;  // ISO 8601 UTC
};

// One holder of the lock during a long wait: from_tsc (guest TSC) is when the lock became its:
// the release of the hold before it when that hold is traced, else its own acquire stamp (the
// hand-over was then at or before it: the stamp is late only if the vCPU stopped between taking
// the lock and reading the TSC); nullopt where its own hold was not traced.
struct HoldLink {
    uint32_t cpu = 0;
    std::optional<uint64_t> from_tsc;
    bool operator==(const HoldLink&) const = default;
};

struct LongWaitEntry {
    uint32_t cpu = 0;
    std::string lock_class;  // the lock's class (results key lock_class)
    uint64_t start_tsc = 0;
    uint64_t wait_cycles = 0;
    std::optional<uint32_t> holder_cpu;      // when the wait began
    std::optional<uint32_t> holder_end_cpu;  // whose release handed the lock over
    uint32_t lhp_class = uint32_t(LhpClass::kUnknown);
    // The holders in order, the first holding when the wait began, placed from the trace's
    // hold events (trace_results.h hand_over_chains); empty: not placed (key omitted).
    std::vector<HoldLink> holds;
    // The guest's steal time of the holder's and its own vCPU during the wait (KVM; 0 without
    // steal time); nullopt: not known (keys omitted).
    std::optional<uint64_t> holder_steal_ns, waiter_steal_ns;
};

struct LongWaits {
    std::vector<LongWaitEntry> entries;
    uint64_t min_cycles = 0;
    // Long waits known to be missing from entries: the trace's EventsLost. Exact when the
    // session traced long waits only; with other groups it counts their lost events too (an
    // upper bound). Buffers lost whole (TraceRecord's log/realtime_buffers_lost) are not in it.
    uint64_t dropped = 0;
};

// A repetition's trace session: its file (relative to the results directory), parameters as
// the guest ran them, what the file holds and the exact loss counters at the stop.
struct TraceRecord {
    std::string file;
    TraceSessionInformation session{};  // parameters, buffers_per_cpu, session_id
    uint64_t events = 0;                // events in the file
    uint64_t buffers = 0;               // buffer frames in the file
    uint64_t damaged_frames = 0;        // frames that failed their checks (skipped)
    bool counters_found = false;        // the file ends with its counters frame
    std::vector<TraceCpuCounters> cpus; // per CPU (the counters frame)
    TraceLossCounters totals{};         // summed over cpus
};

// The snapshot's workload part: the acquisitions of the throughput classes ([workload]
// throughput-classes, name prefixes), under the program's name, whatever the program (lockbench's
// ops are its user classes' acquisitions; kmix's are the kernel classes it drives).
struct WorkloadOps {
    uint64_t ops = 0;
    double ops_per_s = 0;
    std::vector<std::string> classes;  // the throughput-classes prefixes counted
    // Non-empty: the guest counted the operations itself (kSpinlabWorkloadInformation: a Linux
    // guest's agent), and this is what one is ("hackbench runs"); classes is then empty.
    std::string unit;
};

// The workload's own count over a window (two kSpinlabWorkloadInformation answers), under its
// name: ops = end - start (0 when the guest's count went back), unit, no classes.
std::map<std::string, WorkloadOps> counted_workload_ops(const WorkloadInformation& start,
                                                        const WorkloadInformation& end, double duration_s);

struct SnapshotRecord {
    std::string phase;
    uint32_t rep = 1;
    Stamp start, end;
    double duration_s = 0;
    std::map<std::string, WorkloadOps> workload;
    collect::Snapshot counters;  // the repetition's counts (a delta since the reset)
    collect::ClassNames names;
    std::optional<LongWaits> long_waits;  // nullopt: the guest could not list them (key omitted)
    std::optional<TraceRecord> trace;     // nullopt: no trace session ([trace] enable = none)
};

// Each lock class's counters in the collector's form (collector/report_format.h perf_json).
std::string snapshot_json(const SnapshotRecord& r);

// A trace session's parameters as JSON fields (TraceSessionInformation's names; the enable
// flags and the logger mode as the tools spell them), into an open object.
void trace_session_fields(collect::JsonWriter& j, const TraceSessionInformation& p);

// Throughput per workload: acquisitions of classes whose name starts with one of `prefixes`,
// reported under `program`'s name.
std::map<std::string, WorkloadOps> workload_ops(const collect::Snapshot& counters,
                                                const collect::ClassNames& names,
                                                const std::string& program,
                                                const std::vector<std::string>& prefixes,
                                                double duration_s);

struct Done {
    std::string phase;
    uint32_t rep;
};
std::string status_json(bool complete, const std::string& reason, const std::vector<Done>& done);

// How the run-long sampler went (collector/clock_sampler.h): attempts that saw no publication,
// the time it spun (taken from the host's CPUs), and its reference clock.
struct ClockSampling {
    uint64_t missed = 0;
    double spun_ms = 0;
    collect::ClockSampler::Reference reference;
};

// clock.json from a fit (fit.ok must hold).
std::string clock_json(const collect::ClockFit& fit, const ClockSampling& sampling);

struct HostInfo {
    std::string cpu_model;
    std::string kernel;
    uint32_t cpus = 0;
    uint64_t tsc_hz = 0;
    // The CPUID hypervisor bit ("hypervisor" in /proc/cpuinfo's flags): the host is itself a
    // VM, so the guest is nested (slow exits, long waits common even on an idle host).
    bool hypervisor = false;
};

struct Meta {
    std::string run_id, date, git_rev;
    HostInfo host;
    std::string qemu_version;
    std::optional<std::string> libvirt_version;
    std::string accelerator, backend;
    uint32_t vcpus = 0, memory_mb = 0;
    std::string lock, clock;  // lock_algorithm_name(), clock_source_name() of the guest's
    bool pause = true;
    std::string pinning;
    uint64_t guest_tsc_hz = 0;
    std::string workload;  // the init= line
    std::string kernel_append;
    std::vector<std::string> phases;
    uint32_t repetitions = 0;
    std::string order;
    uint64_t seed = 0;
    std::vector<Done> plan;  // the order the repetitions run in
    double duration_s = 0, warmup_s = 0;
    std::string vm_name;
    std::vector<uint64_t> vcpu_thread_ids;
    // "checked: ..." when the guest's CPU n has QEMU vCPU n's APIC id for every n, else
    // "not checked: why" (a mismatch stops the run before this is written).
    std::string cpu_mapping;
    std::string guest_build_id, guest_hypervisor;
    std::string guest = "spinlab";  // vm.guest: spinlab or linux
    std::string guest_kernel;       // a Linux guest's Debian kernel package and version, else empty
    std::string runner_version;
    // The freeze injector's SCHED_FIFO priority: asked (run.freeze-rt-priority), what it got
    // (unknown until a freeze phase has started), and why it fell back to normal priority.
    struct InjectorPriority {
        uint32_t asked = 0;
        std::optional<uint32_t> used;
        std::string fallback;  // empty: none
    } freeze_rt_priority;
    // The freezer of the freeze phases, as each of their conditions measured it before its
    // first freeze (spinlab-load freeze's ready file): the hierarchy, whether v1's static key
    // was held on (freezer.h), and the median freeze and thaw writes on an empty cgroup. Every
    // thaw is asked for about one thaw write early, so a freeze lasts what was asked. Empty: no
    // freeze phase has started (key: an empty array).
    struct FreezerWrites {
        std::string slot;    // "<phase>-r<rep>"
        std::string cgroup;  // v1 | v2
        bool key_held = false;
        double freeze_write_ms = 0, thaw_write_ms = 0;
    };
    std::vector<FreezerWrites> freezer;
    // neighbours-N phases ([neighbours], pinning.h): the host CPUs every VM is pinned to (empty:
    // none), each VM (the measured one first, then neighbour 1 .. the largest N) and, per phase,
    // all running VMs' vCPUs over those host CPUs (over the host's CPUs when nothing is
    // pinned). nullopt: the run has no neighbours phase (key null).
    struct NeighbourVm {
        std::string name, role;  // role: measured | neighbour
        uint32_t vcpus = 0, memory_mb = 0;
        std::string lock, workload;
        std::vector<uint32_t> pin;  // host CPU of vCPU i; empty: not pinned
    };
    struct Neighbours {
        std::vector<uint32_t> host_cpus;
        std::vector<NeighbourVm> vms;
        std::vector<std::pair<std::string, double>> overcommit;  // phase, vCPUs per host CPU
    };
    std::optional<Neighbours> neighbours;
    // What the timeline read the vCPU threads' switches from (hypervisor-hooks/timeline/timeline.h:
    // "sched_switch+perf", "sched_switch", "perf"); empty (null) until a recording started.
    std::string timeline_source;
    std::optional<TraceSessionInformation> trace;  // [trace] as asked for; nullopt: none
    TraceStackInformation trace_stacks{};          // [trace] stack-*, clamped (with trace only)
};
std::string meta_json(const Meta& m);

// halts.csv (analysis/README.md): the guest's halt spans by CPU (collector/halt_log.h), one
// row per span, lost range, halt still in progress (no exit) or refusal (no exit), columns
// results' halts object, kinds results::HaltKind's names, sorted by cpu then enter_tsc. CPUs
// that do not record their halts have no rows.
std::string halts_csv(const std::vector<collect::CpuHalts>& halts);
// Whether any CPU records its halts (a guest without a halt log: no halts.csv).
bool records_halts(const std::vector<collect::CpuHalts>& halts);

// Writes `content` to dir/name through a temporary file and rename. Throws std::runtime_error.
void write_file(const std::string& path, const std::string& content);

// Creates <output>/<run_id>/ and <output>/<run_id>/snapshots/ (a numeric suffix when the id
// exists already) and returns the directory; points <output>/latest at it.
std::string make_run_dir(const std::string& output, std::string& run_id);

// ISO 8601 UTC of a CLOCK_REALTIME nanosecond time, "2025-01-01T12:00:01Z".
std::string iso_utc(uint64_t realtime_ns);

}  // namespace spinlab::run
