// experiments/runner/spec.cc: see spec.h.
//
// Every key is one row of its section's table (kVmKeys, kWorkloadKeys, kRunKeys, kTraceKeys,
// kOutputKeys): its name, its --help text, how its value is read into the Spec (parse) and how
// to_ini writes it back (ini). Boost parses every key as a string and the row's parser turns it
// into its field with the converters below, so a bad value is reported with the key's name,
// where it came from and what is accepted, instead of Boost's generic messages. What depends on
// several keys is judged after them: a section's check, then check_relations. Choices that are
// ABI names (lock, clock, trace mode) come from the ABI's name tables (spinlab/enum_names.h).
#include "spec.h"

#include <spinlab/sysinfo.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>

#include "hostlib/error.h"
#include "lockstat/params.h"
#include "locktrace/stack_settings.h"
#include "locktrace/trace_session.h"
#include "trace/trace_groups.h"

namespace po = boost::program_options;

namespace spinlab::run {
namespace {

// --- converters: text to field, each error naming the key ---------------------------------------

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
                      const std::vector<std::string>& choices) {
    std::string list;
    for (const std::string& c : choices) {
        if (v == c) return v;
        list += list.empty() ? "" : ", ";
        list += c;
    }
    bad(where, v, "must be one of " + list);
}

// An ABI enum's names in value order (its table in spinlab/enum_names.h), and as help text:
// "a, b or c".
std::vector<std::string> names_of(std::span<const EnumName> table) {
    std::vector<std::string> out;
    for (const EnumName& e : table) out.push_back(e.name);
    return out;
}

std::string names_text(std::span<const EnumName> table) {
    std::string s;
    for (size_t i = 0; i < table.size(); ++i)
        s += (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") + std::string(table[i].name);
    return s;
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
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

// 1 to max letters, digits and the characters of extra.
bool is_name(const std::string& v, size_t max, const char* extra) {
    const std::string ok = std::string("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + extra;
    return !v.empty() && v.size() <= max && v.find_first_not_of(ok) == std::string::npos;
}

// A group list ("spinlock,long-wait"), or none/off for no group.
uint32_t to_groups(const std::string& where, const std::string& v, const char* none_hint) {
    if (v == "none" || v == "off") return 0;
    try {
        return collect::parse_trace_groups(join(split(v)), where);
    } catch (const collect::CollectError& e) {
        bad(where, v, std::string(e.what()).substr(where.size() + 2) + none_hint);
    }
}

// --- the key tables ------------------------------------------------------------------------------

struct Key;
// One given key: its value, how messages name it ("--vm.cpus" or "[vm] cpus in FILE"), its row.
struct Arg {
    const std::string& text;
    const std::string& where;
    const Key& key;
};
using Ini = std::optional<std::string>;  // a key's line in to_ini; none: the line is left out

struct Key {
    const char* name;  // within its section
    std::string help;  // its line in --help
    std::function<void(Spec&, const Arg&)> parse;
    std::function<Ini(const Spec&)> ini;
    const char* required = nullptr;  // the error when the key is missing; null: it is optional
    // [trace] session parameters: the name in locktrace::kSessionParamInfo, and the field.
    const char* param = nullptr;
    uint32_t TraceSessionInformation::*field = nullptr;
    // [trace] spinlock-tracing parameters: the index in lockstat::kSpinlockParamInfo (the key
    // is also the kernel's boot option); -1 for other keys.
    int spinlock = -1;
};

std::string onoff(bool b) { return b ? "on" : "off"; }
std::string num(double d) {
    std::ostringstream o;
    o << d;
    return o.str();
}
Ini unless_empty(const std::string& v) { return v.empty() ? Ini() : Ini(v); }

void parse_vm_name(Spec& s, const Arg& a) {
    s.vm.name = a.text;
    if (!is_name(a.text, 40, "_-")) bad(a.where, a.text, "must be 1 to 40 letters, digits, '-' or '_'");
}

void parse_vm_hz(Spec& s, const Arg& a) {
    s.vm.hz = uint32_t(to_u64(a.where, a.text, 0, 10000));
    if (s.vm.hz != 0 && s.vm.hz < 10) bad(a.where, a.text, "must be 0 (the default) or from 10 to 10000");
}

void parse_vm_append(Spec& s, const Arg& a) {
    s.vm.append = a.text;
    check_word(a.where, a.text, true);
    if (a.text.find("init=") != std::string::npos)
        bad(a.where, a.text, "must not set init=: the workload section does");
    if (a.text.find("long-wait=") != std::string::npos)
        bad(a.where, a.text, "must not set long-wait=: [vm] long-wait does");
}

const Key kVmKeys[] = {
    {"name", "VM name (default run<pid>); its state is in <run dir>/vm/NAME (spinlab-load run-dir prints the run "
             "dir)", parse_vm_name,
     [](const Spec& s) { return unless_empty(s.vm.name); }},
    {"attach", "use this already running spinlab-vm VM; it is neither started nor stopped",
     [](Spec& s, const Arg& a) { check_word(a.where, s.vm.attach = a.text, false); },
     [](const Spec& s) { return unless_empty(s.vm.attach); }},
    {"guest",
     "spinlab (default: spinlab's kernel) or linux (Debian's kernel, its spinlock slow-path waits "
     "read by spinlab's agent; vm-images/linux/README.md)",
     [](Spec& s, const Arg& a) { s.vm.guest = to_choice(a.where, a.text, {"spinlab", "linux"}); },
     [](const Spec& s) { return s.vm.guest; }},
    {"cpus", "vCPUs, 1 to 64 (default 2)",
     [](Spec& s, const Arg& a) { s.vm.cpus = uint32_t(to_u64(a.where, a.text, 1, 64)); },
     [](const Spec& s) { return std::to_string(s.vm.cpus); }},
    {"memory", "guest memory in MiB, 64 to 65536 (default 256)",
     [](Spec& s, const Arg& a) { s.vm.memory_mb = uint32_t(to_u64(a.where, a.text, 64, 65536)); },
     [](const Spec& s) { return std::to_string(s.vm.memory_mb); }},
    {"accel", "auto, kvm or tcg (default auto: KVM only with vmx/svm, else TCG)",
     [](Spec& s, const Arg& a) { s.vm.accel = to_choice(a.where, a.text, {"auto", "kvm", "tcg"}); },
     [](const Spec& s) { return s.vm.accel; }},
    {"backend", "qemu or libvirt (default qemu)",
     [](Spec& s, const Arg& a) { s.vm.backend = to_choice(a.where, a.text, {"qemu", "libvirt"}); },
     [](const Spec& s) { return s.vm.backend; }},
    {"lock", "spinlock algorithm: " + names_text(kLockAlgorithmNames) + " (default tas: test-and-set)",
     [](Spec& s, const Arg& a) { s.vm.lock = to_choice(a.where, a.text, names_of(kLockAlgorithmNames)); },
     [](const Spec& s) { return s.vm.lock; }},
    {"clock", "time stamps: " + names_text(kClockSourceNames) + " (default lfence)",
     [](Spec& s, const Arg& a) { s.vm.clock = to_choice(a.where, a.text, names_of(kClockSourceNames)); },
     [](const Spec& s) { return s.vm.clock; }},
    {"pause", "pause in spin loops: on or off (default on)",
     [](Spec& s, const Arg& a) { s.vm.pause = to_bool(a.where, a.text); },
     [](const Spec& s) { return onoff(s.vm.pause); }},
    {"long-wait",
     "contended waits of at least this many TSC cycles are long-wait trace events, the waits the "
     "results list and the report attributes; 1 to 2^62 (default " + std::to_string(kDefaultLongWaitThreshold) +
         " = 2^20, the kernel's and the report's)",
     [](Spec& s, const Arg& a) { s.vm.long_wait = to_u64(a.where, a.text, 1, 1ull << 62); },
     [](const Spec& s) { return std::to_string(s.vm.long_wait); }},
    {"hz", "guest timer rate, 10 to 10000; 0 keeps the kernel's default (default 0)", parse_vm_hz,
     [](const Spec& s) { return std::to_string(s.vm.hz); }},
    {"pin", "host CPU per vCPU, e.g. 0,1 (default: no pinning)",
     [](Spec& s, const Arg& a) { s.vm.pin = to_index_list(a.where, a.text, 1023, true, true); },
     [](const Spec& s) { return join(s.vm.pin); }},
    {"kernel", "kernel ELF (default: spinlab-vm's, build/kernel/spinlab.elf)",
     [](Spec& s, const Arg& a) { s.vm.kernel = a.text; }, [](const Spec& s) { return s.vm.kernel; }},
    {"initrd", "initrd holding the workload (default: build/kernel/initrd.tar)",
     [](Spec& s, const Arg& a) { s.vm.initrd = a.text; }, [](const Spec& s) { return s.vm.initrd; }},
    {"append", "more kernel options, put before init=", parse_vm_append,
     [](const Spec& s) { return s.vm.append; }},
    {"boot-timeout",
     "seconds to wait for the guest's region and channel (default 60); extended while the guest's "
     "console still writes: the wait ends after this many seconds without console output (10 times this under KVM), "
     "at most 10 times that",
     [](Spec& s, const Arg& a) { s.vm.boot_timeout_s = to_seconds(a.where, a.text, 1, 3600, true); },
     [](const Spec& s) { return num(s.vm.boot_timeout_s); }},
    {"channel-timeout",
     "seconds one channel request may take before the guest counts as not answering "
     "(default 5; raise it for fair locks on an oversubscribed host); raised to the seconds the boot "
     "took when that is longer",
     [](Spec& s, const Arg& a) { s.vm.channel_timeout_s = to_seconds(a.where, a.text, 0.1, 600, true); },
     [](const Spec& s) { return num(s.vm.channel_timeout_s); }},
};

void parse_program(Spec& s, const Arg& a) {
    s.workload.program = a.text;
    check_word(a.where, a.text, false);
    if (a.text.empty() || a.text.find('/') != std::string::npos)
        bad(a.where, a.text, "must be a program name from the guest's /bin, e.g. lockbench");
}

void parse_throughput_classes(Spec& s, const Arg& a) {
    s.workload.throughput_classes = split(a.text);
    for (const auto& c : s.workload.throughput_classes)
        if (c.empty() || c.find(' ') != std::string::npos)
            bad(a.where, a.text, "must be lock class name prefixes separated by commas");
}

const Key kWorkloadKeys[] = {
    {"program", "guest program run as init, from /bin (default user: lockbench's classes user0..user15)",
     parse_program, [](const Spec& s) { return s.workload.program; }},
    {"args", "its arguments",
     [](Spec& s, const Arg& a) { check_word(a.where, s.workload.args = a.text, true); },
     [](const Spec& s) { return s.workload.args; }},
    {"kmix", "also run kmix, the kernel workload: on or off (default on)",
     [](Spec& s, const Arg& a) { s.workload.kmix = to_bool(a.where, a.text); },
     [](const Spec& s) { return onoff(s.workload.kmix); }},
    {"kmix-args", "kmix's arguments (default --duration-ms 0)",
     [](Spec& s, const Arg& a) { check_word(a.where, s.workload.kmix_args = a.text, true); },
     [](const Spec& s) { return s.workload.kmix_args; }},
    {"throughput-classes",
     "lock class name prefixes whose acquisitions are the throughput (default user: lockbench's classes user0..user15)",
     parse_throughput_classes, [](const Spec& s) { return join(s.workload.throughput_classes); }},
};

void parse_phases(Spec& s, const Arg& a) {
    std::set<std::string> seen;
    for (const std::string& item : split(a.text)) {
        try {
            s.run.phases.push_back(parse_phase(item));
        } catch (const std::invalid_argument& e) {
            bad(a.where, a.text, e.what());
        }
        if (!seen.insert(s.run.phases.back().name()).second) bad(a.where, a.text, "names " + item + " twice");
    }
    if (s.run.phases.empty()) bad(a.where, a.text, "must name at least one phase");
}

void parse_run_order(Spec& s, const Arg& a) {
    try {
        s.run.order = parse_order(a.text);
    } catch (const std::invalid_argument&) {
        bad(a.where, a.text, "must be abba or shuffle");
    }
}

std::string phase_names(const Spec& s) {
    std::vector<std::string> names;
    for (const Phase& p : s.run.phases) names.push_back(p.name());
    return join(names);
}

const Key kRunKeys[] = {
    {"phases", "comma-separated: idle-host, host-load, freeze-Nms, throttle-P%, neighbours-N", parse_phases,
     phase_names,
     "no phases: set [run] phases (e.g. idle-host,host-load) or --run.phases"},
    {"duration", "seconds measured per phase and repetition (default 8)",
     [](Spec& s, const Arg& a) { s.run.duration_s = to_seconds(a.where, a.text, 0, 86400, false); },
     [](const Spec& s) { return num(s.run.duration_s); }},
    {"warmup", "seconds between starting a condition and resetting the counters (default 2)",
     [](Spec& s, const Arg& a) { s.run.warmup_s = to_seconds(a.where, a.text, 0, 3600, true); },
     [](const Spec& s) { return num(s.run.warmup_s); }},
    {"repetitions", "repetitions of every phase, 1 to 100 (default 3)",
     [](Spec& s, const Arg& a) { s.run.repetitions = uint32_t(to_u64(a.where, a.text, 1, 100)); },
     [](const Spec& s) { return std::to_string(s.run.repetitions); }},
    {"seed", "seed of the shuffle order and of nothing else (default 1)",
     [](Spec& s, const Arg& a) { s.run.seed = to_u64(a.where, a.text, 0, UINT64_MAX); },
     [](const Spec& s) { return std::to_string(s.run.seed); }},
    {"order", "abba (forward, backward, ...) or shuffle (seeded) (default abba)", parse_run_order,
     [](const Spec& s) { return std::string(order_name(s.run.order)); }},
    {"freeze-period-ms", "freeze-Nms: one freeze every this many ms (default 100)",
     [](Spec& s, const Arg& a) { s.run.freeze_period_ms = uint32_t(to_u64(a.where, a.text, 2, 60000)); },
     [](const Spec& s) { return std::to_string(s.run.freeze_period_ms); }},
    {"freeze-rt-priority",
     "freeze-Nms: the freeze injector's SCHED_FIFO priority, 0 for none (default 10: it wakes on time on a busy host)",
     [](Spec& s, const Arg& a) { s.run.freeze_rt_priority = uint32_t(to_u64(a.where, a.text, 0, 99)); },
     [](const Spec& s) { return std::to_string(s.run.freeze_rt_priority); }},
    {"freeze-vcpus", "freeze-Nms: vCPUs frozen (default 0)",
     [](Spec& s, const Arg& a) { s.run.freeze_vcpus = to_index_list(a.where, a.text, 63, false); },
     [](const Spec& s) { return join(s.run.freeze_vcpus); }},
    {"throttle-vcpus", "throttle-P%: vCPUs throttled (default: all)",
     [](Spec& s, const Arg& a) { s.run.throttle_vcpus = to_index_list(a.where, a.text, 63, true); },
     [](const Spec& s) { return join(s.run.throttle_vcpus); }},
    {"hog-cpus", "host-load: host CPUs loaded (default: all)",
     [](Spec& s, const Arg& a) { s.run.hog_cpus = to_index_list(a.where, a.text, 1023, true); },
     [](const Spec& s) { return join(s.run.hog_cpus); }},
    {"clock-samples", "guest/host TSC samples per repetition, 0 to 64 (default 4)",
     [](Spec& s, const Arg& a) { s.run.clock_samples = uint32_t(to_u64(a.where, a.text, 0, 64)); },
     [](const Spec& s) { return std::to_string(s.run.clock_samples); }},
    {"timeline", "record the vCPU threads' sched_switch timeline: on or off (default on)",
     [](Spec& s, const Arg& a) { s.run.timeline = to_bool(a.where, a.text); },
     [](const Spec& s) { return onoff(s.run.timeline); }},
    {"vcpu-state",
     "keep the guest's per-vCPU 'preempted' words from the host while measuring (spinlab-load "
     "--vcpu-state; vcpu_off() in the guest): on or off, needs timeline = on (default off)",
     [](Spec& s, const Arg& a) { s.run.vcpu_state = to_bool(a.where, a.text); },
     [](const Spec& s) { return onoff(s.run.vcpu_state); }},
};

using TSI = TraceSessionInformation;

std::string session_value_text(const TSI& p, uint32_t TSI::*field) {
    if (field == &TSI::logger_mode) return trace_logger_mode_name(TraceLoggerMode(p.logger_mode));
    if (field == &TSI::enable_flags) return collect::trace_groups_text(p.enable_flags);
    return std::to_string(p.*field);
}

// A [trace] session parameter's row (TraceSessionInformation; ETW's logger context:
// BufferSize, ...): param names it in locktrace::kSessionParamInfo. parse null: a number in the
// guest's range for it.
Key session_key(const char* name, std::string help, const char* param, uint32_t TSI::*field,
                std::function<void(Spec&, const Arg&)> parse = nullptr) {
    if (!parse)
        parse = [](Spec& s, const Arg& a) {
            for (const locktrace::SessionParamInfo& info : locktrace::kSessionParamInfo)
                if (std::string(info.name) == a.key.param)
                    s.trace.params.*a.key.field = uint32_t(to_u64(a.where, a.text, info.minimum, info.maximum));
        };
    return {name, std::move(help), std::move(parse),
            [field](const Spec& s) { return session_value_text(s.trace.params, field); }, nullptr, param, field};
}

void parse_logger_mode(Spec& s, const Arg& a) {
    const std::string m = to_choice(a.where, a.text, names_of(kTraceLoggerModeNames));
    for (const EnumName& e : kTraceLoggerModeNames)
        if (m == e.name) s.trace.params.logger_mode = e.value;
}

// A [trace] spin-threshold & co. row: the spinlock-tracing parameter i of
// lockstat::kSpinlockParamInfo (its minimum), passed as the boot option of the key's name
// (kernel_append), so not with vm.attach. Unset: no line in to_ini (the kernel's default).
Key spinlock_key(const char* name, int i, std::string help) {
    auto parse = [i](Spec& s, const Arg& a) {
        const lockstat::SpinlockParamInfo& info = lockstat::kSpinlockParamInfo[i];
        s.trace.spinlock[i] = uint32_t(to_u64(a.where, a.text, info.minimum, UINT32_MAX));
        if (!s.vm.attach.empty())
            bad(a.where, a.text, std::string(info.name) +
                                     " is a boot option: it needs a VM that spinlab-run boots, not vm.attach");
    };
    auto ini = [i](const Spec& s) { return s.trace.spinlock[i] ? Ini(std::to_string(*s.trace.spinlock[i])) : Ini(); };
    return {name, std::move(help), parse, ini, nullptr, nullptr, nullptr, i};
}

void parse_stack_enable(Spec& s, const Arg& a) {
    uint32_t& flags = s.trace.stacks.stack_flags;
    flags = to_groups(a.where, a.text, ", or none");
    if (flags & ~kTraceStackGroups)
        bad(a.where, a.text, "names " + collect::trace_groups_text(flags & ~kTraceStackGroups) +
                                 ": only spinlock, cswitch, ready, syscall, profile and long-wait events carry stacks");
}

void parse_export(Spec& s, const Arg& a) {
    std::vector<std::string>& out = s.trace.exports;
    out.clear();
    if (a.text == "none") return;
    for (const std::string& item : split(a.text)) {
        const std::string f = to_choice(a.where, item, {"ctf", "perfetto"});
        if (std::find(out.begin(), out.end(), f) != out.end()) bad(a.where, a.text, "names " + f + " twice");
        out.push_back(f);
    }
    if (out.empty()) bad(a.where, a.text, "must name ctf, perfetto or none");
    if (!s.trace.enabled()) bad(a.where, a.text, "needs a trace (trace.enable is none)");
}

const Key kTraceKeys[] = {
    session_key("enable",
                "event groups of the session, comma-separated: all, spinlock, cswitch, ready, syscall, "
                "profile, process, memory, long-wait; none: no trace (default long-wait: every wait >= long-wait=)",
                "EnableFlags", &TSI::enable_flags,
                [](Spec& s, const Arg& a) {
                    s.trace.params.enable_flags = to_groups(a.where, a.text, ", or none for no trace");
                }),
    session_key("buffer-size", "BufferSize: bytes per buffer, a multiple of 4096 from 4096 to 1048576 (default 65536)",
                "BufferSize", &TSI::buffer_size),
    session_key("min-buffers", "MinimumBuffers per CPU, 2 to 1024 (default 4)", "MinimumBuffers",
                &TSI::minimum_buffers),
    session_key("max-buffers", "MaximumBuffers per CPU, 2 to 1024 (default 64)", "MaximumBuffers",
                &TSI::maximum_buffers),
    session_key("flush-timer",
                "FlushTimer: ms before a partly filled buffer is published, 0 never, up to 60000 (default 100)",
                "FlushTimer", &TSI::flush_timer_ms),
    session_key("mode", "LoggerMode: " + names_text(kTraceLoggerModeNames) + " (default real-time)", "LoggerMode",
                &TSI::logger_mode, parse_logger_mode),
    session_key("profile-interval", "sampled profile: timer ticks between samples, 1 to 1000 (default 1)",
                "ProfileInterval", &TSI::profile_interval),
    spinlock_key("spin-threshold", 0,
                 "SpinLockSpinThreshold: contended acquisitions with fewer spins are not traced, at least 1 "
                 "(boot option spin-threshold=; default 1)"),
    spinlock_key("acquire-sample-rate", 1,
                 "SpinLockAcquireSampleRate: every Nth uncontended acquisition is sampled, at least 1000 "
                 "(boot option acquire-sample-rate=; default 1000)"),
    spinlock_key("contention-sample-rate", 2,
                 "SpinLockContentionSampleRate: every Nth qualifying contended acquisition is traced, at least 1 "
                 "(boot option contention-sample-rate=; default 1)"),
    spinlock_key("hold-threshold", 3,
                 "SpinLockHoldThreshold: holds of at least this many TSC cycles are traced, at least 1000000 "
                 "(boot option hold-threshold=; default 1000000)"),
    {"stack-enable",
     "StackFlags: groups whose events get a call stack, comma-separated: spinlock, cswitch, ready, "
     "syscall, profile, long-wait (each also in trace.enable); none (default)",
     parse_stack_enable, [](const Spec& s) {
         const uint32_t f = s.trace.stacks.stack_flags;
         return f ? collect::trace_groups_text(f) : std::string("none");
     }},
    {"stack-caching",
     "StackCaching: on (the per-CPU stack cache: an event carries a key) or off (every stack inline) (default on)",
     [](Spec& s, const Arg& a) { s.trace.stacks.caching = to_choice(a.where, a.text, {"on", "off"}) == "on"; },
     [](const Spec& s) { return onoff(s.trace.stacks.caching); }},
    {"stack-depth", "MaxStackDepth: frames per stack, 1 to 256 (default 32)",
     [](Spec& s, const Arg& a) { s.trace.stacks.max_depth = uint32_t(to_u64(a.where, a.text, 1, kTraceMaxStackFrames)); },
     [](const Spec& s) { return std::to_string(s.trace.stacks.max_depth); }},
    // Clamped, never refused (as ETW's stack cache does; check_trace): the clamped value is what
    // runs and what meta.json says.
    {"stack-buckets", "BucketCount of each CPU's stack cache, clamped to 256..4096 (default 256)",
     [](Spec& s, const Arg& a) { s.trace.stacks.bucket_count = uint32_t(to_u64(a.where, a.text, 0, UINT32_MAX)); },
     [](const Spec& s) { return std::to_string(s.trace.stacks.bucket_count); }},
    {"stack-cache-size",
     "CacheSize of the stack caches in bytes, all CPUs together, clamped to 3145728..52428800 (default 3145728)",
     [](Spec& s, const Arg& a) { s.trace.stacks.cache_size = to_u64(a.where, a.text, 0, UINT32_MAX); },
     [](const Spec& s) { return std::to_string(s.trace.stacks.cache_size); }},
    {"export",
     "export every repetition's trace, comma-separated: ctf (trace-export/<phase>-r<rep>.ctf/, for "
     "babeltrace2), perfetto (trace-export/<phase>-r<rep>.json, for the Perfetto UI); none (default)",
     parse_export, [](const Spec& s) { return s.trace.exports.empty() ? std::string("none") : join(s.trace.exports); }},
};

void parse_neighbour_program(Spec& s, const Arg& a) {
    s.neighbours.program = a.text;
    check_word(a.where, a.text, false);
    if (a.text.empty() || a.text.find('/') != std::string::npos)
        bad(a.where, a.text, "must be a program name from the guest's /bin, e.g. lockbench");
}

const Key kNeighbourKeys[] = {
    {"cpus", "neighbours-N: vCPUs of each neighbour VM, 1 to 64 (default: vm.cpus)",
     [](Spec& s, const Arg& a) { s.neighbours.cpus = uint32_t(to_u64(a.where, a.text, 1, 64)); },
     [](const Spec& s) { return s.neighbours.cpus ? Ini(std::to_string(s.neighbours.cpus)) : Ini(); }},
    {"memory", "neighbours-N: each neighbour's memory in MiB, 64 to 65536 (default: vm.memory)",
     [](Spec& s, const Arg& a) { s.neighbours.memory_mb = uint32_t(to_u64(a.where, a.text, 64, 65536)); },
     [](const Spec& s) { return s.neighbours.memory_mb ? Ini(std::to_string(s.neighbours.memory_mb)) : Ini(); }},
    {"lock", "neighbours-N: the neighbours' spinlock algorithm: " + names_text(kLockAlgorithmNames) +
                 " (default: vm.lock)",
     [](Spec& s, const Arg& a) { s.neighbours.lock = to_choice(a.where, a.text, names_of(kLockAlgorithmNames)); },
     [](const Spec& s) { return unless_empty(s.neighbours.lock); }},
    {"program", "neighbours-N: the neighbours' guest program, from /bin (default: the measured VM's [workload], "
                "args and kmix included)",
     parse_neighbour_program, [](const Spec& s) { return unless_empty(s.neighbours.program); }},
    {"args", "neighbours-N: with neighbours.program, its arguments (kmix does not run beside it)",
     [](Spec& s, const Arg& a) { check_word(a.where, s.neighbours.args = a.text, true); },
     [](const Spec& s) { return unless_empty(s.neighbours.args); }},
    {"host-cpus",
     "host CPUs every VM's vCPUs are pinned to for the whole run, e.g. 0,1: the measured VM's vCPUs "
     "first, then each neighbour's, round robin over the list, so the overcommit is set (default: no "
     "pinning)",
     [](Spec& s, const Arg& a) { s.neighbours.host_cpus = to_index_list(a.where, a.text, 1023, true); },
     [](const Spec& s) { return s.neighbours.host_cpus.empty() ? Ini() : Ini(join(s.neighbours.host_cpus)); }},
};

void parse_output_dir(Spec& s, const Arg& a) {
    s.output.dir = a.text;
    if (a.text.empty()) bad(a.where, "", "must name a directory");
}

void parse_run_id(Spec& s, const Arg& a) {
    s.output.run_id = a.text;
    if (!is_name(a.text, std::string::npos, "_.-") || a.text == "latest" || a.text[0] == '.')
        bad(a.where, a.text, "must be letters, digits, '.', '-' or '_', not start with '.', and not be 'latest'");
}

const Key kOutputKeys[] = {
    {"dir", "where results/<run-id>/ and results/latest go (default results)", parse_output_dir,
     [](const Spec& s) { return s.output.dir; }},
    {"run-id", "the run's directory name (default: UTC date and time)", parse_run_id,
     [](const Spec& s) { return unless_empty(s.output.run_id); }},
};

// --- sections: their keys, and what is judged after them ---------------------------------------

// Keys renamed, as {old name, name} (issue 53): a spec or a command line may still give the old
// name, read as the key's; --help lists them as old names, spec.ini writes the name.
const std::pair<const char*, const char*> kOldKeyNames[] = {
    {"run.preempt-period-ms", "run.freeze-period-ms"},
    {"run.preempt-rt-priority", "run.freeze-rt-priority"},
    {"run.preempt-vcpus", "run.freeze-vcpus"},
};

// Every key given (spec file and command line), and how messages name one. A key given by its
// old name is that key, named in messages as it was given.
struct Given {
    const po::variables_map& all;
    const po::variables_map& cmdline;
    const std::string& file;
    bool has(const std::string& key) const { return all.count(given_name(key)) > 0; }
    std::string value(const std::string& key) const { return all[given_name(key)].as<std::string>(); }
    std::string where(const std::string& key) const { return where_named(given_name(key)); }
    // "--vm.cpus" or "[vm] cpus in FILE".
    std::string where_named(const std::string& name) const {
        if (cmdline.count(name) || file.empty()) return "--" + name;
        auto dot = name.find('.');
        return "[" + name.substr(0, dot) + "] " + name.substr(dot + 1) + " in " + file;
    }
    // `key`, or its old name where only that was given; where both were, the one on the command
    // line (it wins over the file), and where both are in one place, an error.
    std::string given_name(const std::string& key) const {
        for (auto [old, name] : kOldKeyNames) {
            if (key != name || !all.count(old)) continue;
            if (!all.count(key)) return old;
            if (cmdline.count(key) != cmdline.count(old)) return cmdline.count(key) ? key : old;
            throw SpecError(where_named(key) + " and " + where_named(old) + ", its old name, are both given: give one");
        }
        return key;
    }
};

void check_run(Spec& s, const Given& g) {
    if (s.run.vcpu_state && !s.run.timeline)  // the words come from the timeline's switch records
        throw SpecError(g.where("run.vcpu-state") + " = on needs " + g.where("run.timeline") + " = on");
}

// What the guest would refuse (kInvalidParameter), said here with the key's name.
void check_session(const TraceSpec& t, const Given& g);

void check_stacks(TraceSpec& t, const Given& g) {
    TraceStackInformation& s = t.stacks;
    s = locktrace::clamp_stack_settings(s);
    if (!s.stack_flags) return;
    const std::string where = g.where("trace.stack-enable");
    if (!t.enabled()) bad(where, g.value("trace.stack-enable"), "needs a trace (trace.enable is none)");
    if (const uint32_t missing = s.stack_flags & ~t.params.enable_flags)
        bad(where, collect::trace_groups_text(s.stack_flags),
            "names " + collect::trace_groups_text(missing) + ", which trace.enable (" +
                collect::trace_groups_text(t.params.enable_flags) + ") does not record");
}

void check_trace(Spec& s, const Given& g) {
    if (s.trace.enabled()) check_session(s.trace, g);
    check_stacks(s.trace, g);
}

struct Section {
    const char* name;
    std::span<const Key> keys;
    void (*check)(Spec&, const Given&);  // after its keys; may be null
};
const Section kSections[] = {
    {"vm", kVmKeys, nullptr},     {"workload", kWorkloadKeys, nullptr}, {"run", kRunKeys, check_run},
    {"trace", kTraceKeys, check_trace}, {"neighbours", kNeighbourKeys, nullptr},
    {"output", kOutputKeys, nullptr},
};

std::string full_name(const Section& s, const Key& k) { return std::string(s.name) + "." + k.name; }

void check_session(const TraceSpec& t, const Given& g) {
    const locktrace::SessionParamInfo* info = locktrace::first_invalid_session_param(t.params);
    if (!info) return;
    for (const Key& k : kTraceKeys)
        if (k.param && std::string(info->name) == k.param) {
            std::string what = std::string(info->name) + " must be " + info->rule;
            if (k.field == &TraceSessionInformation::minimum_buffers)
                what += " (trace.max-buffers = " + std::to_string(t.params.maximum_buffers) + ")";
            bad(g.where(std::string("trace.") + k.name), session_value_text(t.params, k.field), what);
        }
}

// The Linux guest's workloads that run until the VM is stopped (the agent's spinlab.workload=).
const std::vector<std::string> kLinuxWorkloads{"hackbench", "forkexec"};

// vm.guest = linux: what spinlab's kernel alone has is refused, naming the key.
void check_linux_guest(Spec& s, const Given& g) {
    const std::string not_linux = " is spinlab's kernel's; a Linux guest (vm.guest = linux) ";
    const std::vector<std::string> linux_locks{"mcs", "tas", "pvqspin"};
    if (std::find(linux_locks.begin(), linux_locks.end(), s.vm.lock) == linux_locks.end())
        bad(g.where("vm.lock"), s.vm.lock, "a Linux guest's lock is mcs (its native queued spinlock), tas "
                                           "(virt_spin_lock's test-and-set) or pvqspin (its paravirtual queued "
                                           "spinlock, KVM only)");
    if (s.vm.clock != clock_source_name(ClockSource::kLfenceRdtsc))
        bad(g.where("vm.clock"), s.vm.clock, "vm.clock" + not_linux + "stamps its waits with the TSC (trace_clock x86-tsc)");
    if (!s.vm.pause) bad(g.where("vm.pause"), "off", "vm.pause" + not_linux + "spins with cpu_relax(), a pause");
    if (s.vm.hz) bad(g.where("vm.hz"), std::to_string(s.vm.hz), "vm.hz" + not_linux + "runs its own timer rate");
    if (s.vm.long_wait != kDefaultLongWaitThreshold)
        bad(g.where("vm.long-wait"), std::to_string(s.vm.long_wait),
            "vm.long-wait" + not_linux + "agent's long waits are 2^20 cycles and longer");
    for (const Key& k : kTraceKeys)
        if (k.spinlock >= 0 && s.trace.spinlock[k.spinlock])
            bad(g.where(std::string("trace.") + k.name), std::to_string(*s.trace.spinlock[k.spinlock]),
                std::string("trace.") + k.name + not_linux + "traces its long waits only");
    if (s.trace.params.enable_flags & ~kTraceGroupLongWait)
        bad(g.where("trace.enable"), collect::trace_groups_text(s.trace.params.enable_flags),
            "a Linux guest's agent sees slow-path waits, not holds: long-wait or none");
    if (s.workload.kmix)
        bad(g.where("workload.kmix"), "on", "kmix" + not_linux + "runs its own workload: set workload.kmix = off");
    if (std::find(kLinuxWorkloads.begin(), kLinuxWorkloads.end(), s.workload.program) == kLinuxWorkloads.end())
        bad(g.where("workload.program"), s.workload.program,
            "a Linux guest runs one of the agent's workloads until the VM is stopped: hackbench or forkexec");
    for (const std::string& word : split_words(s.workload.args))
        if (word.rfind("spinlab.", 0) != 0)
            bad(g.where("workload.args"), s.workload.args,
                "a Linux guest's workload takes the agent's kernel parameters (spinlab.hackbench=GROUPSxLOOPS, "
                "spinlab.workers=N): '" + word + "' is not one");
    // Its one lock class counts slow-path waits, not the workload's operations.
    s.workload.throughput_classes.clear();
}

// Across sections: pinning and vCPU lists against vm.cpus, freezes against their period.
void check_relations(Spec& s, const Given& g) {
    if (s.vm.guest == "linux") check_linux_guest(s, g);
    const VmSpec& vm = s.vm;
    const RunSpec& r = s.run;
    if (!vm.pin.empty() && vm.pin.size() != vm.cpus)
        bad(g.where("vm.pin"), join(vm.pin), "names " + std::to_string(vm.pin.size()) + " host CPUs for " +
                                                 std::to_string(vm.cpus) + " vCPUs (vm.cpus): give one per vCPU");
    for (const Phase& p : r.phases)
        if (p.kind == PhaseKind::kFreeze && p.freeze_ms >= r.freeze_period_ms)
            bad(g.where("run.phases"), g.value("run.phases"),
                p.name() + " freezes for at least the whole period (run.freeze-period-ms = " +
                    std::to_string(r.freeze_period_ms) + ")");
    const std::pair<const char*, const std::vector<uint32_t>*> vcpu_lists[] = {
        {"run.freeze-vcpus", &r.freeze_vcpus}, {"run.throttle-vcpus", &r.throttle_vcpus}};
    for (const auto& [key, list] : vcpu_lists)
        for (uint32_t v : *list)
            if (v >= vm.cpus)
                bad(g.where(key), join(*list), "vCPU " + std::to_string(v) + " does not exist with vm.cpus = " +
                                                    std::to_string(vm.cpus));
    if (!s.neighbours.host_cpus.empty() && !vm.pin.empty())
        throw SpecError(g.where("neighbours.host-cpus") + " and " + g.where("vm.pin") +
                        " both pin the measured VM: give one");
    if (!s.neighbours.args.empty() && s.neighbours.program.empty())
        bad(g.where("neighbours.args"), s.neighbours.args, "needs neighbours.program (without it the neighbours run "
                                                           "the measured VM's [workload])");
    bool neighbours = false;
    for (const Phase& p : r.phases) neighbours = neighbours || p.kind == PhaseKind::kNeighbours;
    if (neighbours && !vm.attach.empty())
        throw SpecError("vm.attach and a neighbours-N phase: neighbour VMs are started beside a VM spinlab-run "
                        "starts, whose pinning it sets; give vm.name instead");
    if (!vm.attach.empty() && g.has("vm.name"))
        throw SpecError("vm.attach and vm.name both given: attach names the running VM to use, "
                        "name the VM to start; give one");
}

// Every section's keys in table order, each section's check after its keys, then the relations.
void parse_keys(Spec& s, const Given& g) {
    for (const Section& sec : kSections) {
        for (const Key& k : sec.keys) {
            const std::string key = full_name(sec, k);
            if (!g.has(key)) {
                if (k.required) throw SpecError(k.required);
                continue;
            }
            const std::string text = g.value(key), where = g.where(key);
            k.parse(s, Arg{text, where, k});
        }
        if (sec.check) sec.check(s, g);
    }
    check_relations(s, g);
}

// --- Boost: the options, the command line, the spec file ---------------------------------------

po::options_description key_options() {
    po::options_description all;
    for (const Section& sec : kSections) {
        po::options_description group(std::string("[") + sec.name + "]");
        for (const Key& k : sec.keys)
            group.add_options()(full_name(sec, k).c_str(), po::value<std::string>(), k.help.c_str());
        all.add(group);
    }
    return all;
}

// The old names of kOldKeyNames, read as their keys (Given).
po::options_description old_key_options() {
    po::options_description old("Old names (still read, as the key each became)");
    for (auto [name, now] : kOldKeyNames)
        old.add_options()(name, po::value<std::string>(), (std::string("old name of ") + now).c_str());
    return old;
}

// Every key, its old names too: what the command line and a spec file may give.
po::options_description readable_keys() {
    po::options_description all;
    all.add(key_options()).add(old_key_options());
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
    for (const Section& sec : kSections)
        if (section == sec.name)
            for (const Key& k : sec.keys) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

// "[vm], [workload], [run], [trace]" + last_sep + "[output]"
std::string sections_text(const char* last_sep) {
    std::string s;
    for (const Section& sec : kSections)
        s += (s.empty() ? "" : &sec == std::end(kSections) - 1 ? last_sep : ", ") + std::string("[") + sec.name + "]";
    return s;
}

// Boost's unknown-option message, made to name the section and the keys it has.
std::string unknown_key_message(const std::string& name, const std::string& file) {
    const std::string in = file.empty() ? "" : " in " + file;
    auto dot = name.find('.');
    if (dot == std::string::npos)
        return file.empty() ? "unknown option '--" + name + "'; see --help"
                            : "'" + name + "'" + in + " is outside any section: put it under " +
                                  sections_text(" or ");
    std::string section = name.substr(0, dot);
    if (known_keys(section).empty())
        return "unknown section [" + section + "]" + in + ": the sections are " + sections_text(" and ");
    return "unknown key '" + name.substr(dot + 1) + "' in section [" + section + "]" + in +
           "; its keys are " + known_keys(section);
}

po::variables_map read_command_line(int argc, const char* const* argv) {
    po::options_description cmdline;
    cmdline.add(generic_options()).add(readable_keys());
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
    return given;
}

// The spec file's keys into all (where the command line already set a key, it stays).
void read_spec_file(const std::string& path, po::variables_map& all) {
    std::ifstream f(path);
    if (!f) throw SpecError("--spec " + path + ": cannot open it");
    try {
        po::store(po::parse_config_file(f, readable_keys(), false), all);
    } catch (const po::unknown_option& e) {
        throw SpecError(unknown_key_message(e.get_option_name(), path));
    } catch (const po::multiple_occurrences& e) {
        std::string n = e.get_option_name();
        auto dot = n.find('.');
        throw SpecError(path + ": '" + n.substr(dot + 1) + "' appears twice in [" + n.substr(0, dot) + "]");
    } catch (const po::error& e) {
        throw SpecError(path + ": " + e.what());
    }
}

}  // namespace

std::string usage_text() {
    std::ostringstream o;
    o << "spinlab-run: run an experiment (phases x repetitions) on a spinlab VM and write\n"
         "results/<run-id>/ for spinlab-report (the contract: analysis/README.md).\n\n"
         "Usage: spinlab-run [--spec NAME|FILE] [--SECTION.KEY VALUE ...]\n\n"
         "Every key of the spec file is also an option: `[vm] cpus = 2` is `--vm.cpus 2`.\n"
         "A spec NAME is one of the specs that come with spinlab (default, locks, freeze,\n"
         "throttle: share/spinlab/experiments/ when installed, experiments/ in the source tree);\n"
         "without --spec, spinlab-run runs the spec named default (2 vCPUs, an idle host\n"
         "against a busy loop on every host CPU).\n\n"
      << generic_options() << key_options() << "\n"
      << old_key_options()
      << "  the phase preempt-Nms: old name of freeze-Nms\n"
         "  --spec preempt: old name of --spec freeze\n"
      << "\nExit status: 0 complete, 1 partial (interrupted, VM died, a condition failed; the\n"
         "results keep everything gathered), 2 bad spec or options, 3 the VM could not be\n"
         "started or attached, 4 guest ABI version mismatch.\n"
         "\nEXAMPLES\n"
         "  spinlab run                                         # default.ini (make run)\n"
         "  spinlab-run --spec default --run.repetitions 5 --vm.lock ticket\n"
         "  spinlab-run --spec freeze --run.freeze-period-ms 50\n"
         "  spinlab-run --spec ./my-experiment.ini --dry-run\n"
         "  spinlab-run --run.phases idle-host,throttle-50% --run.duration 4 --dry-run\n";
    return o.str();
}

ParsedSpec parse_spec(int argc, const char* const* argv, const SpecFinder& find_spec) {
    const po::variables_map given = read_command_line(argc, argv);
    ParsedSpec out;
    out.help = given.count("help") > 0;
    out.dry_run = given.count("dry-run") > 0;
    if (out.help) return out;

    Spec& s = out.spec;
    const bool named = given.count("spec") > 0;
    if (find_spec) s.spec_file = find_spec(named ? given["spec"].as<std::string>() : "default");
    else if (named) s.spec_file = given["spec"].as<std::string>();
    po::variables_map all = given;
    if (!s.spec_file.empty()) read_spec_file(s.spec_file, all);
    parse_keys(s, Given{all, given, s.spec_file});
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

std::string workload_line(const Spec& s) {
    if (s.vm.guest != "linux") return init_line(s.workload);
    return s.workload.args.empty() ? s.workload.program : s.workload.program + " " + s.workload.args;
}

std::string kernel_append(const Spec& s) {
    if (s.vm.guest == "linux") {  // spinlab-vm --guest linux adds the console, the region and the lock mode
        std::string a = "spinlab.workload=" + s.workload.program + " spinlab.seconds=0 spinlab.trace=1";
        if (!s.workload.args.empty()) a += " " + s.workload.args;
        return s.vm.append.empty() ? a : a + " " + s.vm.append;
    }
    std::string a = "lock=" + s.vm.lock + " clock=" + s.vm.clock + " pause=" + onoff(s.vm.pause) +
                    " long-wait=" + std::to_string(s.vm.long_wait);
    if (s.vm.hz) a += " hz=" + std::to_string(s.vm.hz);
    for (const Key& k : kTraceKeys)  // [trace] spin-threshold & co., when set: the boot options
        if (k.spinlock >= 0 && s.trace.spinlock[k.spinlock])
            a += " " + std::string(k.name) + "=" + std::to_string(*s.trace.spinlock[k.spinlock]);
    if (!s.vm.append.empty()) a += " " + s.vm.append;
    return a + " init=" + init_line(s.workload);
}

std::string to_ini(const Spec& s) {
    std::ostringstream o;
    o << "# the spec as run by spinlab-run" << (s.spec_file.empty() ? "" : " (from " + s.spec_file + ")")
      << "\n";
    for (const Section& sec : kSections) {
        o << (&sec == kSections ? "" : "\n") << "[" << sec.name << "]\n";
        for (const Key& k : sec.keys)
            if (const Ini v = k.ini(s)) o << k.name << " = " << *v << "\n";
    }
    return o.str();
}

}  // namespace spinlab::run
