// collector/options.cc: see options.h.
#include "options.h"

#include <boost/program_options.hpp>
#include <fstream>
#include <sstream>

#include <spinlab/trace.h>

#include "hostlib/error.h"
#include "trace/trace_groups.h"

namespace po = boost::program_options;

namespace spinlab::collect {
namespace {

const char* const kCommands[] = {"query", "set", "reset", "info", "watch", "record", "trace"};

// Numbers are taken as strings and converted here, so "-1" or "12abc" get a sentence naming
// the option instead of Boost's wrap-around or a generic message.
uint32_t to_u32(const std::string& name, const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        throw CollectError(kExitUsage, "--" + name + " must be a whole number from 0 to "
                                       "4294967295, not '" + s + "'");
    if (s.size() > 10 || std::stoull(s) > 0xFFFFFFFFull)
        throw CollectError(kExitUsage, "--" + name + " must be at most 4294967295, not " + s);
    return uint32_t(std::stoull(s));
}

double to_seconds(const std::string& name, const std::string& s, bool zero_ok) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (...) {
        used = 0;
    }
    if (used != s.size() || s.empty() || !(v >= 0) || (!zero_ok && v == 0) || v > 1e7)
        throw CollectError(kExitUsage, "--" + name + " must be a number of seconds" +
                                           (zero_ok ? "" : " above 0") + ", not '" + s + "'");
    return v;
}

bool export_format(const Config& c) {
    return c.format == "ctf" || c.format == "perfetto" || c.format == "columns";
}

// The ABI's logger modes (spinlab/trace.h's name table), "real-time, circular or no-drop-stall".
std::string logger_modes_text() {
    std::string s;
    for (uint32_t i = 0; i < kTraceLoggerModeCount; ++i)
        s += (i == 0 ? "" : i + 1 == kTraceLoggerModeCount ? " or " : ", ") +
             std::string(kTraceLoggerModeNames[i].name);
    return s;
}

uint32_t to_logger_mode(const std::string& m) {
    for (const EnumName& e : kTraceLoggerModeNames)
        if (m == e.name) return e.value;
    throw CollectError(kExitUsage, "--mode must be " + logger_modes_text() + ", not '" + m + "'");
}

struct Descriptions {
    po::options_description generic{"General"};
    po::options_description attach{"Attach (--vm NAME, or --socket and/or --shm)"};
    po::options_description output{"Output (query, watch, info)"};
    po::options_description params{"Parameters (set: EVENT_TRACE_SPINLOCK_INFORMATION)"};
    po::options_description reset{"Reset"};
    po::options_description series{"Series (watch, record)"};
    po::options_description trace{"Trace sessions (trace start, trace record)"};
    po::options_description hidden;
    po::positional_options_description positional;

    Descriptions() {
        generic.add_options()
            ("help,h", "print this help and exit")
            ("config", po::value<std::string>(),
             "read options from FILE (same names, `name = value` lines); the command line wins");
        attach.add_options()
            ("vm", po::value<std::string>(),
             "attach to the VM NAME started by spinlab-vm: <run-dir>/vm/NAME/{control.sock,shm}")
            ("socket", po::value<std::string>(), "the guest's control channel socket (QEMU chardev)")
            ("shm", po::value<std::string>(), "the guest's shared region file (ivshmem memory backend)")
            ("run-dir", po::value<std::string>(),
             "where spinlab-vm publishes VMs (default $SPINLAB_RUN_DIR; /run/spinlab for root; else "
             "$XDG_RUNTIME_DIR/spinlab, /run/user/<uid>/spinlab or ${TMPDIR:-/tmp}/spinlab-<uid>: "
             "spinlab-load run-dir prints it)")
            ("timeout", po::value<std::string>()->default_value("2000"),
             "milliseconds to wait for the guest to answer")
            ("source", po::value<std::string>()->default_value("auto"),
             "where counters come from: region (shared memory, no guest involvement), channel "
             "(a query through the guest's handler) or auto (region when available)");
        output.add_options()
            ("format", po::value<std::string>()->default_value("table"), "table, csv or json; trace export: ctf, perfetto or columns")
            ("per-cpu", po::bool_switch(), "also print every CPU's histograms")
            ("class", po::value<std::vector<std::string>>()->composing(),
             "only this lock class (name or id); repeatable")
            ("all-classes", po::bool_switch(), "also print classes without acquisitions");
        params.add_options()
            ("spin-threshold", po::value<std::string>(), "SpinLockSpinThreshold (min 1)")
            ("acquire-sample-rate", po::value<std::string>(),
             "SpinLockAcquireSampleRate (min 1000)")
            ("contention-sample-rate", po::value<std::string>(),
             "SpinLockContentionSampleRate (min 1)")
            ("hold-threshold", po::value<std::string>(),
             "SpinLockHoldThreshold, TSC cycles (min 1000000)");
        reset.add_options()
            ("cpu", po::value<std::string>(), "reset: only this CPU (default: all); --class narrows to classes");
        series.add_options()
            ("interval,i", po::value<std::string>()->default_value("1"), "seconds between snapshots")
            ("count,c", po::value<std::string>(), "stop after N snapshots")
            ("duration", po::value<std::string>(), "stop after this many seconds")
            ("output,o", po::value<std::string>(), "record: the file to write (JSON lines)")
            ("fsync", po::bool_switch(), "record: fdatasync after every snapshot")
            ("stall-timeout", po::value<std::string>()->default_value("5"),
             "seconds without a guest clock publication after which the guest counts as gone")
            ("clock-samples", po::value<std::string>()->default_value("8"),
             "info: clock publications to sample for the offset/drift fit");
        trace.add_options()
            ("poll-interval", po::value<std::string>(),
             "trace record: seconds to wait after a drain that found nothing (default: a quarter of "
             "the time a CPU's buffers take to fill at the rate drained lately, 50 us to 2 ms)")
            ("buffer-size", po::value<std::string>(), "BufferSize: bytes per buffer, a multiple of 4096 (default 65536)")
            ("min-buffers", po::value<std::string>(), "MinimumBuffers per CPU, allocated at the start (default 4)")
            ("max-buffers", po::value<std::string>(), "MaximumBuffers per CPU, grown into on demand (default 64)")
            ("flush-timer", po::value<std::string>(), "FlushTimer: ms before a partly filled buffer is published; 0 never (default 100)")
            ("mode", po::value<std::string>(), ("LoggerMode: " + logger_modes_text() + " (default real-time)").c_str())
            ("enable", po::value<std::string>(),
             "groups, comma-separated: all, spinlock, cswitch, ready, syscall, profile, process, "
             "memory, long-wait (default spinlock,long-wait)")
            ("profile-interval", po::value<std::string>(), "timer ticks between profile samples (default 1)")
            ("stack-enable", po::value<std::string>(),
             "StackFlags: groups whose events get a call stack: spinlock, cswitch, ready, syscall, "
             "profile, long-wait (default none)")
            ("stack-caching", po::value<std::string>(),
             "StackCaching: on (default: the stack cache, events carry a key) or off (every stack inline)")
            ("stack-depth", po::value<std::string>(), "MaxStackDepth: frames per stack, 1..256 (default 32)")
            ("stack-buckets", po::value<std::string>(),
             "BucketCount of the stack cache, clamped to 256..4096 (default 256)")
            ("stack-cache-size", po::value<std::string>(),
             "CacheSize of the stack cache in bytes for all CPUs, clamped to 3 MB..50 MB (default 3 MB)")
            ("stacks", po::bool_switch(), "dump: print each event's call stack, symbolized with --kernel and --initrd")
            ("top", po::value<std::string>(), "trace stacks: rows of sites.tsv (default 10)")
            ("kernel", po::value<std::string>(), "dump --stacks: the kernel ELF the guest booted (spinlab.elf)")
            ("initrd", po::value<std::string>(), "dump --stacks: the initrd the guest booted (its bin/ programs)")
            ("clock", po::value<std::string>(),
             "export --format ctf or perfetto: the run's clock.json; times become host TSC time (CTF clock offset, Perfetto axis)")
            ("timeline", po::value<std::string>(),
             "export --format perfetto: the run's timeline.csv (host vCPU on/off tracks; needs --clock)");
        hidden.add_options()("command", po::value<std::string>())
            ("args", po::value<std::vector<std::string>>());
        positional.add("command", 1).add("args", -1);
    }

    po::options_description visible() const {
        po::options_description all;
        all.add(generic).add(attach).add(output).add(params).add(reset).add(series).add(trace);
        return all;
    }
    // What a config file may set: everything except --help and --config itself.
    po::options_description file_options() const {
        po::options_description all;
        all.add(attach).add(output).add(params).add(reset).add(series).add(trace);
        return all;
    }
};

}  // namespace

std::string usage_text() {
    Descriptions d;
    std::ostringstream o;
    o << "spinlab-collect: read and steer a spinlab guest's spinlock counters.\n\n"
         "Usage: spinlab-collect COMMAND [options]\n\n"
         "Commands:\n"
         "  query    wait and hold histograms per lock class (merged, --per-cpu), LHP classes;\n"
         "           lock=pvqspin's halts, kicks, spurious wake-ups and steals per CPU\n"
         "  set      change the four spinlock tracing parameters; a refusal names the parameter\n"
         "  reset    zero the counters (all CPUs, or --cpu N; all classes, or --class)\n"
         "  info     the guest's configuration, the shared region, clock offset and drift\n"
         "  watch    print the interval's deltas every --interval seconds\n"
         "  record   write a snapshot every --interval seconds to --output (JSON lines,\n"
         "           written as it goes: a guest that dies leaves every snapshot taken)\n"
         "  trace start|stop|status   a trace session (per-CPU event buffers in the region;\n"
         "           status prints NumberOfBuffers per CPU: MinimumBuffers, grown on demand)\n"
         "  trace flush               every CPU publishes its partly filled buffer; with\n"
         "           --output FILE, a circular session's snapshot: the flight recorder's\n"
         "           buffers now, written to FILE, the session left running\n"
         "  trace record              start one if none runs, drain it into --output (a trace\n"
         "           file; every whole buffer stays if the guest dies), live events/s, MB/s,\n"
         "           lost; stop it at --duration or Ctrl-C if it started it; a buffer it cannot\n"
         "           write (full disk) is counted in RealTimeBuffersLost (exit 1 at the end)\n"
         "  trace dump FILE           a trace file as text, one event per line\n"
         "  trace export FILE         as CTF 1.8 (--format ctf -o DIR, for babeltrace2), Chrome\n"
         "                            trace-event JSON (--format perfetto -o FILE.json, for the\n"
         "                            Perfetto UI) or NumPy tables, one .npy per event type and\n"
         "                            meta.json (--format columns -o DIR, for numpy); --clock\n"
         "                            clock.json (ctf, perfetto), --timeline timeline.csv\n\n"
      << d.visible()
      << "\nExit status: 0 ok, 1 refused or failed, 2 usage, 3 no VM or no answer,\n"
         "4 ABI version mismatch, 5 the guest went away during watch/record,\n"
         "6 the guest's shared region is corrupt (the message names the field and the CPU;\n"
         "what was taken before is kept in the output).\n"
         "\nEXAMPLES\n"
         "  spinlab-collect query --vm lab1\n"
         "  spinlab-collect query --vm lab1 --class sched --per-cpu --format csv\n"
         "  spinlab-collect set --vm lab1 --hold-threshold 2000000\n"
         "  spinlab-collect reset --vm lab1\n"
         "  spinlab-collect watch --socket /tmp/ch.sock --shm /dev/shm/spinlab-lab1 -i 2\n"
         "  spinlab-collect record --vm lab1 -i 0.5 --duration 60 -o results/run1/lockstat.jsonl\n"
         "  spinlab-collect info --vm lab1 --format json\n"
         "  spinlab-collect record --config experiments/collect.ini\n"
         "  spinlab-collect trace record --vm lab1 --enable all --duration 10 -o run.trace\n"
         "  spinlab-collect trace start --vm lab1 --mode circular --max-buffers 8\n"
         "  spinlab-collect trace dump run.trace\n"
         "  spinlab-collect trace export run.trace --format ctf -o run.ctf --clock clock.json\n"
         "  spinlab-collect trace export run.trace --format columns -o run.cols\n";
    return o.str();
}

namespace {

std::string str(const po::variables_map& vm, const char* k) {
    return vm.count(k) ? vm[k].as<std::string>() : std::string();
}

void opt_u32(const po::variables_map& vm, const char* k, std::optional<uint32_t>& dst) {
    if (vm.count(k)) dst = to_u32(k, str(vm, k));
}

// The command line, then --config FILE (the command line wins).
po::variables_map read_args(const Descriptions& d, int argc, const char* const* argv) {
    po::options_description cmdline;
    cmdline.add(d.visible()).add(d.hidden);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(cmdline).positional(d.positional).run(), vm);
        if (vm.count("config")) {
            std::string path = vm["config"].as<std::string>();
            std::ifstream in(path);
            if (!in) throw CollectError(kExitUsage, "cannot read config file " + path);
            po::options_description file = d.file_options();
            file.add(d.hidden);
            po::store(po::parse_config_file(in, file), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw CollectError(kExitUsage, e.what());
    }
    return vm;
}

void parse_command(Config& c, const po::variables_map& vm) {
    if (!vm.count("command"))
        throw CollectError(kExitUsage, "no command given: one of query, set, reset, info, "
                                       "watch, record, trace");
    c.command = vm["command"].as<std::string>();
    bool known = false;
    for (const char* k : kCommands) known = known || c.command == k;
    if (!known)
        throw CollectError(kExitUsage, "unknown command '" + c.command +
                                           "': one of query, set, reset, info, watch, record, trace");
}

// Attach, output, parameters, reset and series options: every command's.
void parse_common(Config& c, const po::variables_map& vm) {
    c.attach.vm = str(vm, "vm");
    c.attach.socket = str(vm, "socket");
    c.attach.shm = str(vm, "shm");
    c.attach.run_dir = str(vm, "run-dir");
    c.timeout_ms = to_u32("timeout", str(vm, "timeout"));
    if (c.timeout_ms == 0) throw CollectError(kExitUsage, "--timeout must be above 0 ms");
    c.source = str(vm, "source");
    if (c.source != "auto" && c.source != "region" && c.source != "channel")
        throw CollectError(kExitUsage,
                           "--source must be auto, region or channel, not '" + c.source + "'");
    c.format = str(vm, "format");
    if (c.format != "table" && c.format != "csv" && c.format != "json" && !export_format(c))
        throw CollectError(kExitUsage, "--format must be table, csv or json (trace export: ctf, "
                                       "perfetto or columns), not '" + c.format + "'");
    c.per_cpu = vm["per-cpu"].as<bool>();
    c.all_classes = vm["all-classes"].as<bool>();
    if (vm.count("class")) c.classes = vm["class"].as<std::vector<std::string>>();
    opt_u32(vm, "spin-threshold", c.spin_threshold);
    opt_u32(vm, "acquire-sample-rate", c.acquire_sample_rate);
    opt_u32(vm, "contention-sample-rate", c.contention_sample_rate);
    opt_u32(vm, "hold-threshold", c.hold_threshold);
    opt_u32(vm, "cpu", c.cpu);
    c.interval_s = to_seconds("interval", str(vm, "interval"), false);
    if (vm.count("count")) {
        c.count = to_u32("count", str(vm, "count"));
        if (c.count == 0) throw CollectError(kExitUsage, "--count must be at least 1");
    }
    if (vm.count("duration")) c.duration_s = to_seconds("duration", str(vm, "duration"), false);
    if (vm.count("poll-interval")) c.poll_interval_s = to_seconds("poll-interval", str(vm, "poll-interval"), false);
    c.output = str(vm, "output");
    c.fsync = vm["fsync"].as<bool>();
    c.stall_timeout_s = to_seconds("stall-timeout", str(vm, "stall-timeout"), false);
    c.clock_samples = to_u32("clock-samples", str(vm, "clock-samples"));
}

// `trace ACTION [FILE...]`: the action and its files.
void parse_trace_action(Config& c, const std::vector<std::string>& args) {
    if (args.empty())
        throw CollectError(kExitUsage, "trace needs an action: start, stop, status, flush, record, dump, export or stacks");
    TraceOptions& t = c.trace;
    t.action = args[0];
    if (t.action != "start" && t.action != "stop" && t.action != "status" && t.action != "flush" &&
        t.action != "record" && t.action != "dump" && t.action != "export" && t.action != "stacks")
        throw CollectError(kExitUsage, "unknown trace action '" + t.action +
                                           "': start, stop, status, flush, record, dump, export or stacks");
    if (t.action == "stacks") {
        if (args.size() < 2) throw CollectError(kExitUsage, "trace stacks needs one or more FILEs");
        t.files.assign(args.begin() + 1, args.end());
        if (c.output.empty()) throw CollectError(kExitUsage, "trace stacks needs --output DIR");
    } else if (t.action == "dump" || t.action == "export") {
        if (args.size() != 2) throw CollectError(kExitUsage, "trace " + t.action + " needs one FILE");
        t.file = args[1];
    } else if (args.size() > 1) {
        throw CollectError(kExitUsage, "trace " + t.action + " takes no argument '" + args[1] + "'");
    }
}

// The session's parameters and stack settings (trace start, record).
void parse_trace_session(TraceOptions& t, const po::variables_map& vm) {
    opt_u32(vm, "buffer-size", t.buffer_size);
    opt_u32(vm, "min-buffers", t.minimum_buffers);
    opt_u32(vm, "max-buffers", t.maximum_buffers);
    opt_u32(vm, "flush-timer", t.flush_timer_ms);
    opt_u32(vm, "profile-interval", t.profile_interval);
    if (vm.count("mode")) t.logger_mode = to_logger_mode(str(vm, "mode"));
    if (vm.count("enable")) t.enable_flags = parse_trace_groups(str(vm, "enable"));
    if (vm.count("stack-enable")) t.stack_flags = parse_trace_groups(str(vm, "stack-enable"), "--stack-enable");
    if (vm.count("stack-caching")) {
        const std::string m = str(vm, "stack-caching");
        if (m != "on" && m != "off")
            throw CollectError(kExitUsage, "--stack-caching must be on or off, not '" + m + "'");
        t.stack_caching = m == "on" ? 1 : 0;
    }
    opt_u32(vm, "stack-depth", t.stack_depth);
    opt_u32(vm, "stack-buckets", t.bucket_count);
    opt_u32(vm, "stack-cache-size", t.stack_cache_size);
}

// dump --stacks, stacks, export: their files and formats.
void parse_trace_files(Config& c, const po::variables_map& vm) {
    TraceOptions& t = c.trace;
    t.stacks = vm.count("stacks") && vm["stacks"].as<bool>();
    if (vm.count("kernel")) t.kernel_elf = str(vm, "kernel");
    if (vm.count("initrd")) t.initrd = str(vm, "initrd");
    if ((!t.kernel_elf.empty() || !t.initrd.empty()) && !t.stacks && t.action != "stacks")
        throw CollectError(kExitUsage, "--kernel and --initrd are for trace dump --stacks and trace stacks");
    if (vm.count("top")) t.top = to_u32("top", str(vm, "top"));
    if (t.action == "record" && c.output.empty())
        throw CollectError(kExitUsage, "trace record needs --output FILE");
    if (vm.count("clock")) t.clock_json = str(vm, "clock");
    if (vm.count("timeline")) t.timeline_csv = str(vm, "timeline");
    if (t.action != "export") return;
    if (!export_format(c)) throw CollectError(kExitUsage, "trace export needs --format ctf, perfetto or columns");
    if (c.output.empty())
        throw CollectError(kExitUsage, "trace export needs --output DIR (ctf, columns) or FILE.json (perfetto)");
    if (!t.timeline_csv.empty() && c.format != "perfetto")
        throw CollectError(kExitUsage, "--timeline is for --format perfetto");
    if (!t.clock_json.empty() && c.format == "columns")
        throw CollectError(kExitUsage, "--clock is for --format ctf or perfetto (the columns carry guest TSC as it is)");
    if (!t.timeline_csv.empty() && t.clock_json.empty())
        throw CollectError(kExitUsage, "--timeline needs --clock: host intervals are placed through it");
}

// What a command needs of the options given.
void check_command(const Config& c) {
    if (export_format(c) && !(c.command == "trace" && c.trace.action == "export"))
        throw CollectError(kExitUsage, "--format " + c.format + " is for trace export only");
    if (c.command == "set" && !c.spin_threshold && !c.acquire_sample_rate &&
        !c.contention_sample_rate && !c.hold_threshold)
        throw CollectError(kExitUsage, "set needs at least one of --spin-threshold, "
                                       "--acquire-sample-rate, --contention-sample-rate, "
                                       "--hold-threshold");
    if (c.command == "record" && c.output.empty())
        throw CollectError(kExitUsage, "record needs --output FILE");
    if (c.command == "info" && c.clock_samples == 1)
        throw CollectError(kExitUsage, "--clock-samples must be 0 (no fit) or at least 2");
}

}  // namespace

ParsedArgs parse_args(int argc, const char* const* argv) {
    Descriptions d;
    const po::variables_map vm = read_args(d, argc, argv);
    ParsedArgs out;
    out.usage = usage_text();
    if (vm.count("help")) {
        out.help = true;
        return out;
    }
    Config& c = out.config;
    parse_command(c, vm);
    parse_common(c, vm);
    const std::vector<std::string> args =
        vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>{};
    if (c.command == "trace") {
        parse_trace_action(c, args);
        parse_trace_session(c.trace, vm);
        parse_trace_files(c, vm);
    } else if (!args.empty()) {
        throw CollectError(kExitUsage, c.command + " takes no argument '" + args[0] + "'");
    }
    check_command(c);
    return out;
}

}  // namespace spinlab::collect
