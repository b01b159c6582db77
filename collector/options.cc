// collector/options.cc: see options.h.
#include "options.h"

#include <boost/program_options.hpp>
#include <fstream>
#include <sstream>

#include "error.h"

namespace po = boost::program_options;

namespace spinlab::collect {
namespace {

const char* const kCommands[] = {"query", "set", "reset", "info", "watch", "record"};

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

struct Descriptions {
    po::options_description generic{"General"};
    po::options_description attach{"Attach (--vm NAME, or --socket and/or --shm)"};
    po::options_description output{"Output (query, watch, info)"};
    po::options_description params{"Parameters (set: EVENT_TRACE_SPINLOCK_INFORMATION)"};
    po::options_description reset{"Reset"};
    po::options_description series{"Series (watch, record)"};
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
             "where spinlab-vm publishes VMs (default $SPINLAB_RUN_DIR, else /run/spinlab)")
            ("timeout", po::value<std::string>()->default_value("2000"),
             "milliseconds to wait for the guest to answer")
            ("source", po::value<std::string>()->default_value("auto"),
             "where counters come from: region (shared memory, no guest involvement), channel "
             "(a query through the guest's handler) or auto (region when available)");
        output.add_options()
            ("format", po::value<std::string>()->default_value("table"), "table, csv or json")
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
        hidden.add_options()("command", po::value<std::string>());
        positional.add("command", 1);
    }

    po::options_description visible() const {
        po::options_description all;
        all.add(generic).add(attach).add(output).add(params).add(reset).add(series);
        return all;
    }
    // What a config file may set: everything except --help and --config itself.
    po::options_description file_options() const {
        po::options_description all;
        all.add(attach).add(output).add(params).add(reset).add(series);
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
         "  query    wait and hold histograms per lock class (merged, --per-cpu), LHP classes\n"
         "  set      change the four spinlock tracing parameters; a refusal names the parameter\n"
         "  reset    zero the counters (all CPUs, or --cpu N; all classes, or --class)\n"
         "  info     the guest's configuration, the shared region, clock offset and drift\n"
         "  watch    print the interval's deltas every --interval seconds\n"
         "  record   write a snapshot every --interval seconds to --output (JSON lines,\n"
         "           written as it goes: a guest that dies leaves every snapshot taken)\n\n"
      << d.visible()
      << "\nExit status: 0 ok, 1 refused or failed, 2 usage, 3 no VM or no answer,\n"
         "4 ABI version mismatch, 5 the guest went away during watch/record.\n"
         "\nEXAMPLES\n"
         "  spinlab-collect query --vm lab1\n"
         "  spinlab-collect query --vm lab1 --class sched --per-cpu --format csv\n"
         "  spinlab-collect set --vm lab1 --hold-threshold 2000000\n"
         "  spinlab-collect reset --vm lab1\n"
         "  spinlab-collect watch --socket /tmp/ch.sock --shm /dev/shm/spinlab-lab1 -i 2\n"
         "  spinlab-collect record --vm lab1 -i 0.5 --duration 60 -o results/run1/lockstat.jsonl\n"
         "  spinlab-collect info --vm lab1 --format json\n"
         "  spinlab-collect record --config experiments/collect.ini\n";
    return o.str();
}

ParsedArgs parse_args(int argc, const char* const* argv) {
    Descriptions d;
    po::options_description cmdline;
    cmdline.add(d.visible()).add(d.hidden);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv)
                      .options(cmdline)
                      .positional(d.positional)
                      .run(),
                  vm);
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

    ParsedArgs out;
    out.usage = usage_text();
    if (vm.count("help")) {
        out.help = true;
        return out;
    }
    Config& c = out.config;
    if (!vm.count("command"))
        throw CollectError(kExitUsage, "no command given: one of query, set, reset, info, "
                                       "watch, record");
    c.command = vm["command"].as<std::string>();
    bool known = false;
    for (const char* k : kCommands) known = known || c.command == k;
    if (!known)
        throw CollectError(kExitUsage, "unknown command '" + c.command +
                                           "': one of query, set, reset, info, watch, record");

    auto str = [&](const char* k) -> std::string {
        return vm.count(k) ? vm[k].as<std::string>() : std::string();
    };
    c.attach.vm = str("vm");
    c.attach.socket = str("socket");
    c.attach.shm = str("shm");
    c.attach.run_dir = str("run-dir");
    c.timeout_ms = to_u32("timeout", str("timeout"));
    if (c.timeout_ms == 0) throw CollectError(kExitUsage, "--timeout must be above 0 ms");
    c.source = str("source");
    if (c.source != "auto" && c.source != "region" && c.source != "channel")
        throw CollectError(kExitUsage,
                           "--source must be auto, region or channel, not '" + c.source + "'");
    c.format = str("format");
    if (c.format != "table" && c.format != "csv" && c.format != "json")
        throw CollectError(kExitUsage,
                           "--format must be table, csv or json, not '" + c.format + "'");
    c.per_cpu = vm["per-cpu"].as<bool>();
    c.all_classes = vm["all-classes"].as<bool>();
    if (vm.count("class")) c.classes = vm["class"].as<std::vector<std::string>>();

    auto opt_u32 = [&](const char* k, std::optional<uint32_t>& dst) {
        if (vm.count(k)) dst = to_u32(k, str(k));
    };
    opt_u32("spin-threshold", c.spin_threshold);
    opt_u32("acquire-sample-rate", c.acquire_sample_rate);
    opt_u32("contention-sample-rate", c.contention_sample_rate);
    opt_u32("hold-threshold", c.hold_threshold);
    opt_u32("cpu", c.cpu);

    c.interval_s = to_seconds("interval", str("interval"), false);
    if (vm.count("count")) {
        c.count = to_u32("count", str("count"));
        if (c.count == 0) throw CollectError(kExitUsage, "--count must be at least 1");
    }
    if (vm.count("duration")) c.duration_s = to_seconds("duration", str("duration"), false);
    c.output = str("output");
    c.fsync = vm["fsync"].as<bool>();
    c.stall_timeout_s = to_seconds("stall-timeout", str("stall-timeout"), false);
    c.clock_samples = to_u32("clock-samples", str("clock-samples"));

    if (c.command == "set" && !c.spin_threshold && !c.acquire_sample_rate &&
        !c.contention_sample_rate && !c.hold_threshold)
        throw CollectError(kExitUsage, "set needs at least one of --spin-threshold, "
                                       "--acquire-sample-rate, --contention-sample-rate, "
                                       "--hold-threshold");
    if (c.command == "record" && c.output.empty())
        throw CollectError(kExitUsage, "record needs --output FILE");
    if (c.command == "info" && c.clock_samples == 1)
        throw CollectError(kExitUsage, "--clock-samples must be 0 (no fit) or at least 2");
    return out;
}

}  // namespace spinlab::collect
