// experiments/runner/spec.cc: see spec.h.
//
// Every key is declared once in kKeys (section, key, help); Boost parses them all as strings
// and the converters below turn each into its field, so a bad value is reported with the key's
// name, where it came from and what is accepted, instead of Boost's generic messages.
#include "spec.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "error.h"
#include "lockstat/params.h"
#include "locktrace/trace_session.h"
#include "locktrace/stack_settings.h"
#include "trace/trace_text.h"

namespace po = boost::program_options;

namespace spinlab::run {
namespace {

struct Key {
    const char* section;
    const char* name;
    const char* help;
};

const Key kKeys[] = {
    {"vm", "name", "VM name (default run<pid>); its state is in $SPINLAB_RUN_DIR/vm/NAME"},
    {"vm", "attach", "use this already running spinlab-vm VM; it is neither started nor stopped"},
    {"vm", "cpus", "vCPUs, 1 to 64 (default 2)"},
    {"vm", "memory", "guest memory in MiB, 64 to 65536 (default 256)"},
    {"vm", "accel", "auto, kvm or tcg (default auto: KVM only with vmx/svm, else TCG)"},
    {"vm", "backend", "qemu or libvirt (default qemu)"},
    {"vm", "lock",
     "spinlock algorithm: tas, ticket, mcs, pv, pticket, pvmcs or student "
     "(default tas: test-and-set)"},
    {"vm", "clock", "time stamps: lfence, rdtscp or cpuid (default lfence)"},
    {"vm", "pause", "pause in spin loops: on or off (default on)"},
    {"vm", "hz", "guest timer rate, 10 to 10000; 0 keeps the kernel's default (default 0)"},
    {"vm", "pin", "host CPU per vCPU, e.g. 0,1 (default: no pinning)"},
    {"vm", "kernel", "kernel ELF (default: spinlab-vm's, build/kernel/spinlab.elf)"},
    {"vm", "initrd", "initrd holding the workload (default: build/kernel/initrd.tar)"},
    {"vm", "append", "more kernel options, put before init="},
    {"vm", "boot-timeout", "seconds to wait for the guest's region and channel (default 60)"},
    {"vm", "channel-timeout", "seconds one channel request may take before the guest counts as not answering "
                              "(default 5; raise it for fair locks on an oversubscribed host)"},
    {"workload", "program", "guest program run as init, from /bin (default user: lockbench's classes user0..user15)"},
    {"workload", "args", "its arguments"},
    {"workload", "kmix", "also run kmix, the kernel workload: on or off (default on)"},
    {"workload", "kmix-args", "kmix's arguments (default --duration-ms 0)"},
    {"workload", "throughput-classes",
     "lock class name prefixes whose acquisitions are the throughput (default user: lockbench's classes user0..user15)"},
    {"run", "phases", "comma-separated: idle-host, host-load, preempt-Nms, throttle-P%"},
    {"run", "duration", "seconds measured per phase and repetition (default 8)"},
    {"run", "warmup", "seconds between starting a condition and resetting the counters (default 2)"},
    {"run", "repetitions", "repetitions of every phase, 1 to 100 (default 3)"},
    {"run", "seed", "seed of the shuffle order and of nothing else (default 1)"},
    {"run", "order", "abba (forward, backward, ...) or shuffle (seeded) (default abba)"},
    {"run", "preempt-period-ms", "preempt-Nms: one freeze every this many ms (default 100)"},
    {"run", "preempt-rt-priority", "preempt-Nms: the freeze injector's SCHED_FIFO priority, 0 for none "
                                   "(default 10: it wakes on time on a busy host)"},
    {"run", "preempt-vcpus", "preempt-Nms: vCPUs frozen (default 0)"},
    {"run", "throttle-vcpus", "throttle-P%: vCPUs throttled (default: all)"},
    {"run", "hog-cpus", "host-load: host CPUs loaded (default: all)"},
    {"run", "clock-samples", "guest/host TSC samples per repetition, 0 to 64 (default 4)"},
    {"run", "timeline", "record the vCPU threads' sched_switch timeline: on or off (default on)"},
    {"run", "vcpu-state", "keep the guest's per-vCPU 'preempted' words from the host while measuring "
                          "(spinlab-load --vcpu-state; vcpu_preempted() in the guest): on or off, "
                          "needs timeline = on (default off)"},
    {"trace", "enable",
     "event groups of the session, comma-separated: all, spinlock, cswitch, ready, syscall, "
     "profile, process, memory, longwait; none: no trace (default longwait: every wait >= longwait=)"},
    {"trace", "buffer-size", "BufferSize: bytes per buffer, a multiple of 4096 from 4096 to 1048576 (default 65536)"},
    {"trace", "min-buffers", "MinimumBuffers per CPU, 2 to 1024 (default 4)"},
    {"trace", "max-buffers", "MaximumBuffers per CPU, 2 to 1024 (default 64)"},
    {"trace", "flush-timer", "FlushTimer: ms before a partly filled buffer is published, 0 never, up to 60000 (default 100)"},
    {"trace", "mode", "LoggerMode: real-time, circular or no-drop-stall (default real-time)"},
    {"trace", "profile-interval", "sampled profile: timer ticks between samples, 1 to 1000 (default 1)"},
    {"trace", "spin-threshold",
     "SpinLockSpinThreshold: contended acquisitions with fewer spins are not traced, at least 1 "
     "(boot option spin-threshold=; default 1)"},
    {"trace", "acquire-sample-rate",
     "SpinLockAcquireSampleRate: every Nth uncontended acquisition is sampled, at least 1000 "
     "(boot option acquire-sample-rate=; default 1000)"},
    {"trace", "contention-sample-rate",
     "SpinLockContentionSampleRate: every Nth qualifying contended acquisition is traced, at least 1 "
     "(boot option contention-sample-rate=; default 1)"},
    {"trace", "hold-threshold",
     "SpinLockHoldThreshold: holds of at least this many TSC cycles are traced, at least 1000000 "
     "(boot option hold-threshold=; default 1000000)"},
    {"trace", "stack-enable",
     "StackFlags: groups whose events get a call stack, comma-separated: spinlock, cswitch, ready, "
     "syscall, profile, longwait (each also in trace.enable); none (default)"},
    {"trace", "stack-caching",
     "StackCaching: on (the per-CPU stack cache: an event carries a key) or off (every stack inline) (default on)"},
    {"trace", "stack-depth", "MaxStackDepth: frames per stack, 1 to 256 (default 32)"},
    {"trace", "stack-buckets", "BucketCount of each CPU's stack cache, clamped to 256..4096 (default 256)"},
    {"trace", "stack-cache-size",
     "CacheSize of the stack caches in bytes, all CPUs together, clamped to 3145728..52428800 (default 3145728)"},
    {"trace", "export",
     "export every repetition's trace, comma-separated: ctf (trace-export/<phase>-r<rep>.ctf/, for "
     "babeltrace2), perfetto (trace-export/<phase>-r<rep>.json, for the Perfetto UI); none (default)"},
    {"output", "dir", "where results/<run-id>/ and results/latest go (default results)"},
    {"output", "run-id", "the run's directory name (default: UTC date and time)"},
};

std::string full_name(const Key& k) { return std::string(k.section) + "." + k.name; }

// Where a value came from, for messages: "--vm.cpus" or "vm.cpus in FILE".
struct Origin {
    const po::variables_map* cmdline;
    std::string file;
    std::string operator()(const std::string& key) const {
        if (cmdline->count(key) || file.empty()) return "--" + key;
        auto dot = key.find('.');
        return "[" + key.substr(0, dot) + "] " + key.substr(dot + 1) + " in " + file;
    }
};

[[noreturn]] void bad(const std::string& where, const std::string& value, const std::string& what) {
    throw SpecError(where + " = '" + value + "': " + what);
}

uint64_t to_u64(const std::string& where, const std::string& v, uint64_t lo, uint64_t hi) {
    const std::string range = "must be a whole number from " + std::to_string(lo) + " to " +
                              std::to_string(hi);
    if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos)
        bad(where, v, range);
    unsigned long long n = 0;
    try {
        n = std::stoull(v);
    } catch (...) {
        bad(where, v, range);
    }
    if (n < lo || n > hi) bad(where, v, range);
    return n;
}

double to_seconds(const std::string& where, const std::string& v, double lo, double hi,
                  bool lo_inclusive) {
    std::ostringstream range;
    range << "must be a number of seconds " << (lo_inclusive ? "from " : "above ") << lo
          << (lo_inclusive ? " to " : " and at most ") << hi;
    size_t used = 0;
    double d = 0;
    try {
        d = std::stod(v, &used);
    } catch (...) {
        used = 0;
    }
    if (v.empty() || used != v.size() || !(d == d) || d > hi || d < lo || (!lo_inclusive && d == lo))
        bad(where, v, range.str());
    return d;
}

bool to_bool(const std::string& where, const std::string& v) {
    if (v == "on" || v == "yes" || v == "true" || v == "1") return true;
    if (v == "off" || v == "no" || v == "false" || v == "0") return false;
    bad(where, v, "must be on or off");
}

std::string to_choice(const std::string& where, const std::string& v,
                      std::initializer_list<const char*> choices) {
    std::string list;
    for (const char* c : choices) {
        if (v == c) return v;
        list += list.empty() ? "" : ", ";
        list += c;
    }
    bad(where, v, "must be one of " + list);
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : s + ",") {
        if (ch == ',') {
            auto b = cur.find_first_not_of(" \t");
            auto e = cur.find_last_not_of(" \t");
            out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
            cur.clear();
        } else {
            cur += ch;
        }
    }
    if (out.size() == 1 && out[0].empty()) out.clear();
    return out;
}

std::vector<uint32_t> to_index_list(const std::string& where, const std::string& v, uint32_t hi,
                                    bool allow_empty, bool allow_repeats = false) {
    std::vector<uint32_t> out;
    std::set<uint32_t> seen;
    for (const std::string& item : split(v)) {
        if (item.empty()) bad(where, v, "has an empty item: write numbers separated by commas");
        uint32_t n = uint32_t(to_u64(where, item, 0, hi));
        if (!seen.insert(n).second && !allow_repeats) bad(where, v, "names " + item + " twice");
        out.push_back(n);
    }
    if (out.empty() && !allow_empty) bad(where, v, "must name at least one number");
    return out;
}

std::string join(const std::vector<uint32_t>& v) {
    std::string s;
    for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
}

// Kernel command-line words must not contain spaces; init= arguments may, but not quotes
// (the kernel splits on spaces and knows no quoting).
void check_word(const std::string& where, const std::string& v, bool spaces_ok) {
    for (char c : v) {
        if (c == '"' || c == '\'' || c == '\n' || c == '\r' || c == '\t' || (!spaces_ok && c == ' '))
            bad(where, v, spaces_ok ? "must not contain quotes, tabs or newlines (the guest "
                                      "splits its command line on spaces and knows no quoting)"
                                    : "must be one word (no spaces or quotes)");
    }
}

po::options_description key_options() {
    po::options_description all;
    for (const char* section : {"vm", "workload", "run", "trace", "output"}) {
        po::options_description group(std::string("[") + section + "]");
        for (const Key& k : kKeys)
            if (std::string(k.section) == section)
                group.add_options()(full_name(k).c_str(), po::value<std::string>(), k.help);
        all.add(group);
    }
    return all;
}

po::options_description generic_options() {
    po::options_description g("General");
    g.add_options()("help,h", "print this help and exit")(
        "spec", po::value<std::string>(),
        "the experiment spec: an INI file or a spec's name (default: default); command-line "
        "keys win")(
        "dry-run", "print the kernel command line and the order of phases, start nothing");
    return g;
}

std::string known_keys(const std::string& section) {
    std::string s;
    for (const Key& k : kKeys)
        if (section == k.section) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

// Boost's unknown-option message, made to name the section and the keys it has.
std::string unknown_key_message(const std::string& name, const std::string& file) {
    const std::string in = file.empty() ? "" : " in " + file;
    auto dot = name.find('.');
    if (dot == std::string::npos)
        return file.empty() ? "unknown option '--" + name + "'; see --help"
                            : "'" + name + "'" + in +
                                  " is outside any section: put it under [vm], [workload], "
                                  "[run], [trace] or [output]";
    std::string section = name.substr(0, dot);
    if (known_keys(section).empty())
        return "unknown section [" + section + "]" + in + ": the sections are [vm], [workload], "
               "[run], [trace] and [output]";
    return "unknown key '" + name.substr(dot + 1) + "' in section [" + section + "]" + in +
           "; its keys are " + known_keys(section);
}

// [trace] key -> the session parameter it sets (its name in TraceSessionInformation, after ETW's
// logger context: BufferSize, ...).
struct TraceKey {
    const char* key;
    const char* param;  // locktrace::kSessionParamInfo's name
    uint32_t TraceSessionInformation::*field;
};
const TraceKey kTraceKeys[] = {
    {"trace.enable", "EnableFlags", &TraceSessionInformation::enable_flags},
    {"trace.buffer-size", "BufferSize", &TraceSessionInformation::buffer_size},
    {"trace.min-buffers", "MinimumBuffers", &TraceSessionInformation::minimum_buffers},
    {"trace.max-buffers", "MaximumBuffers", &TraceSessionInformation::maximum_buffers},
    {"trace.flush-timer", "FlushTimer", &TraceSessionInformation::flush_timer_ms},
    {"trace.mode", "LoggerMode", &TraceSessionInformation::logger_mode},
    {"trace.profile-interval", "ProfileInterval", &TraceSessionInformation::profile_interval},
};

std::string trace_value_text(const TraceSessionInformation& p, const TraceKey& k) {
    if (k.field == &TraceSessionInformation::logger_mode)
        return trace_logger_mode_name(TraceLoggerMode(p.logger_mode));
    if (k.field == &TraceSessionInformation::enable_flags) return collect::trace_groups_text(p.enable_flags);
    return std::to_string(p.*k.field);
}

template <class Has, class Str, class Where>
void parse_trace(TraceSpec& t, const Has& has, const Str& str, const Where& where) {
    TraceSessionInformation& p = t.params;
    for (const TraceKey& k : kTraceKeys) {
        if (!has(k.key)) continue;
        const std::string v = str(k.key);
        if (k.field == &TraceSessionInformation::logger_mode) {
            p.logger_mode = uint32_t(TraceLoggerMode::kRealTime);
            const std::string m = to_choice(where(k.key), v, {"real-time", "circular", "no-drop-stall"});
            for (uint32_t i = 0; i < kTraceLoggerModeCount; ++i)
                if (m == trace_logger_mode_name(TraceLoggerMode(i))) p.logger_mode = i;
        } else if (k.field == &TraceSessionInformation::enable_flags) {
            if (v == "none" || v == "off") {
                p.enable_flags = 0;
                continue;
            }
            try {
                p.enable_flags = collect::parse_trace_groups(join(split(v)), where(k.key));
            } catch (const collect::CollectError& e) {
                bad(where(k.key), v, std::string(e.what()).substr(where(k.key).size() + 2) +
                                         ", or none for no trace");
            }
        } else {
            for (const locktrace::SessionParamInfo& info : locktrace::kSessionParamInfo)
                if (std::string(info.name) == k.param)
                    p.*k.field = uint32_t(to_u64(where(k.key), v, info.minimum, info.maximum));
        }
    }
    if (!t.enabled()) return;
    // What the guest would refuse (kInvalidParameter), said here with the key's name.
    if (const locktrace::SessionParamInfo* info = locktrace::first_invalid_session_param(p))
        for (const TraceKey& k : kTraceKeys)
            if (std::string(info->name) == k.param) {
                std::string what = std::string(info->name) + " must be " + info->rule;
                if (k.field == &TraceSessionInformation::minimum_buffers)
                    what += " (trace.max-buffers = " + std::to_string(p.maximum_buffers) + ")";
                bad(where(k.key), trace_value_text(p, k), what);
            }
}

// [trace] spin-threshold, acquire-sample-rate, contention-sample-rate, hold-threshold: one row
// per spinlock-tracing parameter, index into lockstat::kSpinlockParamInfo (its name and minimum)
// and TraceSpec::spinlock. The key without "trace." is the kernel's boot option.
const char* const kSpinlockKeys[lockstat::kSpinlockParamCount] = {
    "trace.spin-threshold", "trace.acquire-sample-rate", "trace.contention-sample-rate",
    "trace.hold-threshold"};

template <class Has, class Str, class Where>
void parse_trace_spinlock(TraceSpec& t, const std::string& attach, const Has& has, const Str& str,
                          const Where& where) {
    for (uint32_t i = 0; i < lockstat::kSpinlockParamCount; ++i) {
        const char* key = kSpinlockKeys[i];
        if (!has(key)) continue;
        const lockstat::SpinlockParamInfo& info = lockstat::kSpinlockParamInfo[i];
        t.spinlock[i] = uint32_t(to_u64(where(key), str(key), info.minimum, UINT32_MAX));
        if (!attach.empty())
            bad(where(key), str(key), std::string(info.name) +
                                          " is a boot option: it needs a VM that spinlab-run boots, not vm.attach");
    }
}

// [trace] stack-*: the stack settings (TraceStackInformation), checked as the guest checks them
// (locktrace::first_invalid_stack_param), each error naming its key.
template <class Has, class Str, class Where>
void parse_trace_stacks(TraceSpec& t, const Has& has, const Str& str, const Where& where) {
    TraceStackInformation& s = t.stacks;
    if (has("trace.stack-enable")) {
        const std::string v = str("trace.stack-enable");
        if (v == "none" || v == "off") {
            s.stack_flags = 0;
        } else {
            try {
                s.stack_flags = collect::parse_trace_groups(join(split(v)), where("trace.stack-enable"));
            } catch (const collect::CollectError& e) {
                bad(where("trace.stack-enable"), v,
                    std::string(e.what()).substr(where("trace.stack-enable").size() + 2) + ", or none");
            }
            if (s.stack_flags & ~kTraceStackGroups)
                bad(where("trace.stack-enable"), v,
                    "names " + collect::trace_groups_text(s.stack_flags & ~kTraceStackGroups) +
                        ": only spinlock, cswitch, ready, syscall, profile and longwait events carry stacks");
        }
    }
    if (has("trace.stack-caching"))
        s.caching = to_choice(where("trace.stack-caching"), str("trace.stack-caching"), {"on", "off"}) == "on";
    if (has("trace.stack-depth"))
        s.max_depth = uint32_t(to_u64(where("trace.stack-depth"), str("trace.stack-depth"), 1, kTraceMaxStackFrames));
    // Clamped, never refused (as ETW's stack cache does); the clamped value is what runs and
    // what meta.json says.
    if (has("trace.stack-buckets"))
        s.bucket_count = uint32_t(to_u64(where("trace.stack-buckets"), str("trace.stack-buckets"), 0, UINT32_MAX));
    if (has("trace.stack-cache-size"))
        s.cache_size = to_u64(where("trace.stack-cache-size"), str("trace.stack-cache-size"), 0, UINT32_MAX);
    s = locktrace::clamp_stack_settings(s);
    if (!s.stack_flags) return;
    if (!t.enabled())
        bad(where("trace.stack-enable"), str("trace.stack-enable"), "needs a trace (trace.enable is none)");
    if (const uint32_t missing = s.stack_flags & ~t.params.enable_flags)
        bad(where("trace.stack-enable"), collect::trace_groups_text(s.stack_flags),
            "names " + collect::trace_groups_text(missing) + ", which trace.enable (" +
                collect::trace_groups_text(t.params.enable_flags) + ") does not record");
}

}  // namespace

std::string usage_text() {
    std::ostringstream o;
    o << "spinlab-run: run an experiment (phases x repetitions) on a spinlab VM and write\n"
         "results/<run-id>/ for spinlab-report (the contract: analysis/README.md).\n\n"
         "Usage: spinlab-run [--spec NAME|FILE] [--SECTION.KEY VALUE ...]\n\n"
         "Every key of the spec file is also an option: `[vm] cpus = 2` is `--vm.cpus 2`.\n"
         "A spec NAME is one of the specs that come with spinlab (default, locks, preempt,\n"
         "throttle: share/spinlab/experiments/ when installed, experiments/ in the source tree);\n"
         "without --spec, spinlab-run runs the spec named default (2 vCPUs, an idle host\n"
         "against a busy loop on every host CPU).\n\n"
      << generic_options() << key_options()
      << "\nExit status: 0 complete, 1 partial (interrupted, VM died, a condition failed; the\n"
         "results keep everything gathered), 2 bad spec or options, 3 the VM could not be\n"
         "started or attached, 4 guest ABI version mismatch.\n"
         "\nEXAMPLES\n"
         "  spinlab run                                         # default.ini (make run)\n"
         "  spinlab-run --spec default --run.repetitions 5 --vm.lock ticket\n"
         "  spinlab-run --spec preempt --run.preempt-period-ms 50\n"
         "  spinlab-run --spec ./my-experiment.ini --dry-run\n"
         "  spinlab-run --run.phases idle-host,throttle-50% --run.duration 4 --dry-run\n";
    return o.str();
}

ParsedSpec parse_spec(int argc, const char* const* argv, const SpecFinder& find_spec) {
    po::options_description cmdline;
    cmdline.add(generic_options()).add(key_options());
    po::variables_map given;
    try {
        // No guessing: `--vm.cpu` must not quietly mean --vm.cpus.
        po::store(po::command_line_parser(argc, argv)
                      .options(cmdline)
                      .style(po::command_line_style::default_style &
                             ~po::command_line_style::allow_guessing)
                      .run(),
                  given);
    } catch (const po::unknown_option& e) {
        std::string n = e.get_option_name();
        while (!n.empty() && n[0] == '-') n.erase(0, 1);
        throw SpecError(unknown_key_message(n, ""));
    } catch (const po::multiple_occurrences& e) {
        throw SpecError(e.get_option_name() + " is given twice on the command line");
    } catch (const po::error& e) {
        throw SpecError(std::string(e.what()) + "; see --help");
    }
    ParsedSpec out;
    out.help = given.count("help") > 0;
    out.dry_run = given.count("dry-run") > 0;
    if (out.help) return out;

    po::variables_map all = given;
    Spec& s = out.spec;
    if (find_spec) s.spec_file = find_spec(given.count("spec") ? given["spec"].as<std::string>() : "default");
    else if (given.count("spec")) s.spec_file = given["spec"].as<std::string>();
    if (!s.spec_file.empty()) {
        std::ifstream f(s.spec_file);
        if (!f) throw SpecError("--spec " + s.spec_file + ": cannot open it");
        try {
            po::store(po::parse_config_file(f, key_options(), false), all);
        } catch (const po::unknown_option& e) {
            throw SpecError(unknown_key_message(e.get_option_name(), s.spec_file));
        } catch (const po::multiple_occurrences& e) {
            std::string n = e.get_option_name();
            auto dot = n.find('.');
            throw SpecError(s.spec_file + ": '" + n.substr(dot + 1) + "' appears twice in [" +
                            n.substr(0, dot) + "]");
        } catch (const po::error& e) {
            throw SpecError(s.spec_file + ": " + e.what());
        }
    }
    Origin where{&given, s.spec_file};
    auto has = [&](const char* k) { return all.count(k) > 0; };
    auto str = [&](const char* k) { return all[k].as<std::string>(); };

    VmSpec& vm = s.vm;
    if (has("vm.name")) {
        vm.name = str("vm.name");
        if (vm.name.empty() || vm.name.size() > 40 ||
            vm.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_-") != std::string::npos)
            bad(where("vm.name"), vm.name, "must be 1 to 40 letters, digits, '-' or '_'");
    }
    if (has("vm.attach")) {
        vm.attach = str("vm.attach");
        check_word(where("vm.attach"), vm.attach, false);
    }
    if (has("vm.cpus")) vm.cpus = uint32_t(to_u64(where("vm.cpus"), str("vm.cpus"), 1, 64));
    if (has("vm.memory"))
        vm.memory_mb = uint32_t(to_u64(where("vm.memory"), str("vm.memory"), 64, 65536));
    if (has("vm.accel")) vm.accel = to_choice(where("vm.accel"), str("vm.accel"), {"auto", "kvm", "tcg"});
    if (has("vm.backend"))
        vm.backend = to_choice(where("vm.backend"), str("vm.backend"), {"qemu", "libvirt"});
    if (has("vm.lock"))
        vm.lock = to_choice(where("vm.lock"), str("vm.lock"),
                            {"tas", "ticket", "mcs", "pv", "pticket", "pvmcs", "student"});
    if (has("vm.clock"))
        vm.clock = to_choice(where("vm.clock"), str("vm.clock"), {"lfence", "rdtscp", "cpuid"});
    if (has("vm.pause")) vm.pause = to_bool(where("vm.pause"), str("vm.pause"));
    if (has("vm.hz")) {
        vm.hz = uint32_t(to_u64(where("vm.hz"), str("vm.hz"), 0, 10000));
        if (vm.hz != 0 && vm.hz < 10)
            bad(where("vm.hz"), str("vm.hz"), "must be 0 (the default) or from 10 to 10000");
    }
    if (has("vm.pin")) {
        vm.pin = to_index_list(where("vm.pin"), str("vm.pin"), 1023, true, true);
    }
    if (has("vm.kernel")) vm.kernel = str("vm.kernel");
    if (has("vm.initrd")) vm.initrd = str("vm.initrd");
    if (has("vm.append")) {
        vm.append = str("vm.append");
        check_word(where("vm.append"), vm.append, true);
        if (vm.append.find("init=") != std::string::npos)
            bad(where("vm.append"), vm.append, "must not set init=: the workload section does");
    }
    if (has("vm.boot-timeout"))
        vm.boot_timeout_s = to_seconds(where("vm.boot-timeout"), str("vm.boot-timeout"), 1, 3600, true);
    if (has("vm.channel-timeout"))
        vm.channel_timeout_s =
            to_seconds(where("vm.channel-timeout"), str("vm.channel-timeout"), 0.1, 600, true);

    WorkloadSpec& w = s.workload;
    if (has("workload.program")) {
        w.program = str("workload.program");
        check_word(where("workload.program"), w.program, false);
        if (w.program.empty() || w.program.find('/') != std::string::npos)
            bad(where("workload.program"), w.program, "must be a program name from the guest's "
                                                      "/bin, e.g. lockbench");
    }
    if (has("workload.args")) {
        w.args = str("workload.args");
        check_word(where("workload.args"), w.args, true);
    }
    if (has("workload.kmix")) w.kmix = to_bool(where("workload.kmix"), str("workload.kmix"));
    if (has("workload.kmix-args")) {
        w.kmix_args = str("workload.kmix-args");
        check_word(where("workload.kmix-args"), w.kmix_args, true);
    }
    if (has("workload.throughput-classes")) {
        w.throughput_classes = split(str("workload.throughput-classes"));
        for (const auto& c : w.throughput_classes)
            if (c.empty() || c.find(' ') != std::string::npos)
                bad(where("workload.throughput-classes"), str("workload.throughput-classes"),
                    "must be lock class name prefixes separated by commas");
    }

    RunSpec& r = s.run;
    if (!has("run.phases"))
        throw SpecError("no phases: set [run] phases (e.g. idle-host,host-load) or --run.phases");
    {
        const std::string v = str("run.phases");
        std::set<std::string> seen;
        for (const std::string& item : split(v)) {
            try {
                r.phases.push_back(parse_phase(item));
            } catch (const std::invalid_argument& e) {
                bad(where("run.phases"), v, e.what());
            }
            if (!seen.insert(r.phases.back().name()).second)
                bad(where("run.phases"), v, "names " + item + " twice");
        }
        if (r.phases.empty()) bad(where("run.phases"), v, "must name at least one phase");
    }
    if (has("run.duration"))
        r.duration_s = to_seconds(where("run.duration"), str("run.duration"), 0, 86400, false);
    if (has("run.warmup"))
        r.warmup_s = to_seconds(where("run.warmup"), str("run.warmup"), 0, 3600, true);
    if (has("run.repetitions"))
        r.repetitions = uint32_t(to_u64(where("run.repetitions"), str("run.repetitions"), 1, 100));
    if (has("run.seed")) r.seed = to_u64(where("run.seed"), str("run.seed"), 0, UINT64_MAX);
    if (has("run.order")) {
        try {
            r.order = parse_order(str("run.order"));
        } catch (const std::invalid_argument&) {
            bad(where("run.order"), str("run.order"), "must be abba or shuffle");
        }
    }
    if (has("run.preempt-rt-priority"))
        r.preempt_rt_priority =
            uint32_t(to_u64(where("run.preempt-rt-priority"), str("run.preempt-rt-priority"), 0, 99));
    if (has("run.preempt-period-ms"))
        r.preempt_period_ms =
            uint32_t(to_u64(where("run.preempt-period-ms"), str("run.preempt-period-ms"), 2, 60000));
    if (has("run.preempt-vcpus"))
        r.preempt_vcpus = to_index_list(where("run.preempt-vcpus"), str("run.preempt-vcpus"), 63, false);
    if (has("run.throttle-vcpus"))
        r.throttle_vcpus = to_index_list(where("run.throttle-vcpus"), str("run.throttle-vcpus"), 63, true);
    if (has("run.hog-cpus"))
        r.hog_cpus = to_index_list(where("run.hog-cpus"), str("run.hog-cpus"), 1023, true);
    if (has("run.clock-samples"))
        r.clock_samples = uint32_t(to_u64(where("run.clock-samples"), str("run.clock-samples"), 0, 64));
    if (has("run.timeline")) r.timeline = to_bool(where("run.timeline"), str("run.timeline"));
    if (has("run.vcpu-state")) r.vcpu_state = to_bool(where("run.vcpu-state"), str("run.vcpu-state"));
    if (r.vcpu_state && !r.timeline)  // the words come from the timeline's switch records
        throw SpecError(where("run.vcpu-state") + " = on needs " + where("run.timeline") + " = on");

    parse_trace(s.trace, has, str, where);
    parse_trace_spinlock(s.trace, s.vm.attach, has, str, where);
    parse_trace_stacks(s.trace, has, str, where);
    if (has("trace.export")) {
        const std::string v = str("trace.export");
        s.trace.exports.clear();
        if (v != "none") {
            for (const std::string& item : split(v)) {
                const std::string f = to_choice(where("trace.export"), item, {"ctf", "perfetto"});
                if (std::find(s.trace.exports.begin(), s.trace.exports.end(), f) != s.trace.exports.end())
                    bad(where("trace.export"), v, "names " + f + " twice");
                s.trace.exports.push_back(f);
            }
            if (s.trace.exports.empty()) bad(where("trace.export"), v, "must name ctf, perfetto or none");
            if (!s.trace.enabled())
                bad(where("trace.export"), v, "needs a trace (trace.enable is none)");
        }
    }

    if (has("output.dir")) {
        s.output.dir = str("output.dir");
        if (s.output.dir.empty()) bad(where("output.dir"), "", "must name a directory");
    }
    if (has("output.run-id")) {
        s.output.run_id = str("output.run-id");
        if (s.output.run_id.empty() || s.output.run_id == "latest" || s.output.run_id[0] == '.' ||
            s.output.run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_.-") != std::string::npos)
            bad(where("output.run-id"), s.output.run_id,
                "must be letters, digits, '.', '-' or '_', not start with '.', and not be 'latest'");
    }

    // Relations between keys.
    if (!vm.pin.empty() && vm.pin.size() != vm.cpus)
        bad(where("vm.pin"), join(vm.pin), "names " + std::to_string(vm.pin.size()) +
                                               " host CPUs for " + std::to_string(vm.cpus) +
                                               " vCPUs (vm.cpus): give one per vCPU");
    for (const Phase& p : r.phases) {
        if (p.kind == PhaseKind::kPreempt && p.freeze_ms >= r.preempt_period_ms)
            bad(where("run.phases"), str("run.phases"),
                p.name() + " freezes for at least the whole period (run.preempt-period-ms = " +
                    std::to_string(r.preempt_period_ms) + ")");
    }
    for (uint32_t v : r.preempt_vcpus)
        if (v >= vm.cpus)
            bad(where("run.preempt-vcpus"), join(r.preempt_vcpus),
                "vCPU " + std::to_string(v) + " does not exist with vm.cpus = " +
                    std::to_string(vm.cpus));
    for (uint32_t v : r.throttle_vcpus)
        if (v >= vm.cpus)
            bad(where("run.throttle-vcpus"), join(r.throttle_vcpus),
                "vCPU " + std::to_string(v) + " does not exist with vm.cpus = " +
                    std::to_string(vm.cpus));
    if (!vm.attach.empty() && has("vm.name"))
        throw SpecError("vm.attach and vm.name both given: attach names the running VM to use, "
                        "name the VM to start; give one");
    return out;
}

TraceStackInformation TraceSpec::default_stacks() { return locktrace::default_stack_settings(); }

TraceSessionInformation TraceSpec::default_params() {
    TraceSessionInformation p = locktrace::default_session_params();
    p.enable_flags = kTraceGroupLongWait;
    return p;
}

std::string init_line(const WorkloadSpec& w) {
    // The kernel runs one program as init. With kmix on, /bin/par runs the workload and kmix
    // side by side (`par PROG ARGS -- PROG ARGS`); kmix as the workload gets no second kmix.
    std::string line = "/bin/" + w.program;
    if (!w.args.empty()) line += " " + w.args;
    if (w.kmix && w.program != "kmix") line = "/bin/par " + line + " -- /bin/kmix " + w.kmix_args;
    return line;
}

std::string kernel_append(const Spec& s) {
    std::string a = "lock=" + s.vm.lock + " clock=" + s.vm.clock + " pause=" +
                    (s.vm.pause ? "on" : "off");
    if (s.vm.hz) a += " hz=" + std::to_string(s.vm.hz);
    for (uint32_t i = 0; i < lockstat::kSpinlockParamCount; ++i)  // [trace] spin-threshold & co.
        if (s.trace.spinlock[i]) a += " " + std::string(kSpinlockKeys[i]).substr(6) + "=" + std::to_string(*s.trace.spinlock[i]);
    if (!s.vm.append.empty()) a += " " + s.vm.append;
    return a + " init=" + init_line(s.workload);
}

std::string to_ini(const Spec& s) {
    std::ostringstream o;
    auto onoff = [](bool b) { return b ? "on" : "off"; };
    o << "# the spec as run by spinlab-run" << (s.spec_file.empty() ? "" : " (from " + s.spec_file + ")")
      << "\n[vm]\n";
    if (!s.vm.name.empty()) o << "name = " << s.vm.name << "\n";
    if (!s.vm.attach.empty()) o << "attach = " << s.vm.attach << "\n";
    o << "cpus = " << s.vm.cpus << "\nmemory = " << s.vm.memory_mb << "\naccel = " << s.vm.accel
      << "\nbackend = " << s.vm.backend << "\nlock = " << s.vm.lock << "\nclock = " << s.vm.clock
      << "\npause = " << onoff(s.vm.pause) << "\nhz = " << s.vm.hz << "\npin = " << join(s.vm.pin)
      << "\nkernel = " << s.vm.kernel << "\ninitrd = " << s.vm.initrd << "\nappend = " << s.vm.append
      << "\nboot-timeout = " << s.vm.boot_timeout_s << "\nchannel-timeout = " << s.vm.channel_timeout_s
      << "\n\n[workload]\nprogram = "
      << s.workload.program << "\nargs = " << s.workload.args << "\nkmix = " << onoff(s.workload.kmix)
      << "\nkmix-args = " << s.workload.kmix_args
      << "\nthroughput-classes = " << join(s.workload.throughput_classes) << "\n\n[run]\nphases = ";
    std::vector<std::string> names;
    for (const Phase& p : s.run.phases) names.push_back(p.name());
    o << join(names) << "\nduration = " << s.run.duration_s << "\nwarmup = " << s.run.warmup_s
      << "\nrepetitions = " << s.run.repetitions << "\nseed = " << s.run.seed
      << "\norder = " << order_name(s.run.order) << "\npreempt-period-ms = " << s.run.preempt_period_ms
      << "\npreempt-rt-priority = " << s.run.preempt_rt_priority
      << "\npreempt-vcpus = " << join(s.run.preempt_vcpus)
      << "\nthrottle-vcpus = " << join(s.run.throttle_vcpus) << "\nhog-cpus = " << join(s.run.hog_cpus)
      << "\nclock-samples = " << s.run.clock_samples << "\ntimeline = " << onoff(s.run.timeline)
      << "\nvcpu-state = " << onoff(s.run.vcpu_state)
      << "\n\n[trace]\n";
    for (const TraceKey& k : kTraceKeys)
        o << std::string(k.key).substr(6) << " = " << trace_value_text(s.trace.params, k) << "\n";
    for (uint32_t i = 0; i < lockstat::kSpinlockParamCount; ++i)  // unset: the kernel's default
        if (s.trace.spinlock[i])
            o << std::string(kSpinlockKeys[i]).substr(6) << " = " << *s.trace.spinlock[i] << "\n";
    const TraceStackInformation& st = s.trace.stacks;
    o << "stack-enable = " << (st.stack_flags ? collect::trace_groups_text(st.stack_flags) : std::string("none"))
      << "\nstack-caching = " << onoff(st.caching) << "\nstack-depth = " << st.max_depth
      << "\nstack-buckets = " << st.bucket_count << "\nstack-cache-size = " << st.cache_size << "\n";
    o << "export = " << (s.trace.exports.empty() ? std::string("none") : join(s.trace.exports)) << "\n";
    o << "\n[output]\ndir = " << s.output.dir << "\n";
    if (!s.output.run_id.empty()) o << "run-id = " << s.output.run_id << "\n";
    return o.str();
}

}  // namespace spinlab::run
