// collector/options.h: spinlab-collect's command line and config file, parsed into a Config
// returned by value. The option names are the same on the command line (--interval 2) and in
// a config file given with --config (interval = 2), as in an experiment spec.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attach.h"

namespace spinlab::collect {

// `trace ACTION [FILE]`: unset parameters take the session defaults (locktrace/trace_session.h).
struct TraceOptions {
    std::string action;  // start | stop | status | record | dump | export
    std::string file;    // dump, export: the trace file
    std::vector<std::string> files;  // stacks: the trace files (a phase's repetitions)
    uint32_t top = 10;   // stacks: rows of sites.tsv
    std::string clock_json;    // export: the run's clock.json (guest TSC -> host TSC)
    std::string timeline_csv;  // export: the run's timeline.csv (host vCPU on/off intervals)
    std::optional<uint32_t> buffer_size;
    std::optional<uint32_t> minimum_buffers;
    std::optional<uint32_t> maximum_buffers;
    std::optional<uint32_t> flush_timer_ms;
    std::optional<uint32_t> logger_mode;  // TraceLoggerMode
    std::optional<uint32_t> enable_flags;
    std::optional<uint32_t> profile_interval;
    // Call stacks (TraceStackInformation; start, record):
    std::optional<uint32_t> stack_flags;
    std::optional<uint32_t> stack_caching;
    std::optional<uint32_t> stack_depth;
    std::optional<uint32_t> bucket_count;
    std::optional<uint32_t> stack_cache_size;
    // dump: symbolized stacks under their events, from these ELF files.
    bool stacks = false;
    std::string kernel_elf;
    std::string initrd;
};

struct Config {
    std::string command;  // query | set | reset | info | watch | record | trace
    AttachOptions attach;
    uint32_t timeout_ms = 2000;
    std::string source = "auto";  // auto | region | channel

    std::string format = "table";
    bool per_cpu = false;
    std::vector<std::string> classes;  // --class: names or ids; empty = every active class
    bool all_classes = false;          // also print classes without acquisitions

    // set: unset fields keep the guest's current value
    std::optional<uint32_t> spin_threshold;
    std::optional<uint32_t> acquire_sample_rate;
    std::optional<uint32_t> contention_sample_rate;
    std::optional<uint32_t> hold_threshold;

    std::optional<uint32_t> cpu;  // reset: one CPU (default all)

    double interval_s = 1.0;     // watch, record
    uint64_t count = 0;          // snapshots; 0 = until stopped (or --duration)
    double duration_s = 0;       // 0 = no limit
    double poll_interval_s = 0;  // trace record: the wait after an empty drain; 0 = adaptive
    std::string output;          // record: the file
    bool fsync = false;          // record: fdatasync after every snapshot
    double stall_timeout_s = 5;  // record/watch: the guest is gone when its clock stalls this long
    uint32_t clock_samples = 8;  // info: clock publications sampled for the offset/drift fit
    TraceOptions trace;
};

struct ParsedArgs {
    bool help = false;  // --help: print `usage` and exit 0
    std::string usage;
    Config config;
};

// Throws CollectError(kExitUsage) with what was wrong (the caller prints the usage after it).
ParsedArgs parse_args(int argc, const char* const* argv);

// The --help text: commands, option groups, EXAMPLES.
std::string usage_text();

}  // namespace spinlab::collect
