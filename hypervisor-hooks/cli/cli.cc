#include "cli.h"

#include "hostlib/run_dir.h"

#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "hypervisor-hooks/cleanup/stale_cleanup.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/id_list.h"
#include "hypervisor-hooks/libvirt/libvirt_metadata.h"

namespace spinlab::load {

namespace po = boost::program_options;

namespace {
const std::vector<std::string> kCommands = {"hog",      "throttle", "freeze", "pin",
                                            "timeline", "cleanup",  "libvirt-args", "run-dir"};
// Commands renamed, as {old name, name}: the old name still runs the command, for the scripts
// and libvirt domains that say it (issue 53).
const std::pair<const char*, const char*> kOldCommandNames[] = {{"preempt", "freeze"}};

// Raw option values; converted and checked into the Command after parsing.
struct Raw {
    std::string config, cpus, vcpus, cgroup = "auto", schedule = "fixed", qmp;
    std::vector<std::string> tids, neighbours;
    int qemu_pid = 0;
    double freeze_ms = 10, freeze_max_ms = 0, period_ms = 100, phase_ms = 0;
    uint64_t seed = 1;
    bool no_switch_records = false;
};

po::options_description session_group(Command& c, Raw& r) {
    po::options_description g("Session (cleanup and coordination)");
    g.add_options()
        ("help,h", po::bool_switch(&c.help), "show this help")
        ("config", po::value(&r.config), "read options from this INI file (same long names)")
        ("state-dir", po::value(&c.session.state_dir),
         "where ledgers of what was changed are kept (default: the run directory, which "
         "spinlab-load run-dir prints)")
        ("survive-parent", po::bool_switch(&c.session.survive_parent),
         "keep running when the parent dies (default: stop and clean up)")
        ("ready-file", po::value(&c.session.ready_file),
         "write this file once the load is in effect (removed at exit)");
    return g;
}

po::options_description thread_group(Raw& r) {
    po::options_description g("Threads (exactly one of --tid, --qemu-pid, --qmp)");
    g.add_options()
        ("tid", po::value(&r.tids)->composing(),
         "thread ids, comma separated or repeated; the position is the vCPU index")
        ("qemu-pid", po::value(&r.qemu_pid), "QEMU pid: its threads named 'CPU <n>/TCG|KVM'")
        ("qmp", po::value(&r.qmp), "QMP UNIX socket: vCPU threads from query-cpus-fast")
        ("vcpus", po::value(&r.vcpus), "only these vCPU indexes (e.g. 0,2-3)");
    return g;
}

double* duration_target(Command& c) {
    if (c.name == "hog") return &c.hog.duration_s;
    if (c.name == "throttle") return &c.throttle.duration_s;
    if (c.name == "freeze") return &c.freeze.duration_s;
    return &c.timeline.duration_s;
}

// The options of each command of its own.
po::options_description hog_group(Command& c, Raw& r) {
    po::options_description g("Hog");
    g.add_options()
        ("cpus", po::value(&r.cpus), "host CPUs to load (default: all this process may use)")
        ("duty", po::value(&c.hog.duty_pct)->default_value(100), "busy percent of each period")
        ("period-ms", po::value(&c.hog.period_ms)->default_value(100), "duty-cycle period")
        ("nice", po::value(&c.hog.nice)->default_value(0), "nice level of the hogs (-20..19)");
    return g;
}

po::options_description throttle_group(Command& c, Raw& r) {
    po::options_description g("Throttle (CFS bandwidth)");
    g.add_options()
        ("quota-pct", po::value(&c.throttle.quota_pct)->default_value(50),
         "percent of one CPU each thread may use")
        ("period-us", po::value(&c.throttle.period_us)->default_value(100000), "CFS period")
        ("cgroup", po::value(&r.cgroup)->default_value("auto"), "auto, v1 or v2");
    return g;
}

po::options_description freeze_group(Command& c, Raw& r) {
    po::options_description g("Freeze (schedule)");
    g.add_options()
        ("freeze-ms", po::value(&r.freeze_ms)->default_value(10), "length of each freeze")
        ("freeze-max-ms", po::value(&r.freeze_max_ms)->default_value(0),
         "if set, lengths are uniform in [freeze-ms, freeze-max-ms]")
        ("period-ms", po::value(&r.period_ms)->default_value(100), "one freeze per period (mean)")
        ("schedule", po::value(&r.schedule)->default_value("fixed"), "fixed, uniform or poisson")
        ("seed", po::value(&r.seed)->default_value(1), "seed of the random schedules")
        ("phase-ms", po::value(&r.phase_ms)->default_value(0), "fixed: offset of the first freeze")
        ("stagger", po::bool_switch(&c.freeze.stagger), "offset thread i by i*period/N")
        ("start-delay", po::value(&c.freeze.start_delay_s)->default_value(0),
         "seconds before the first period")
        ("out", po::value(&c.freeze.out_csv), "CSV of the freezes (default stdout)")
        ("latency-json", po::value(&c.freeze.latency_json),
         "write the freezer's latencies (median, p99, max) here as JSON at exit")
        ("cgroup", po::value(&r.cgroup)->default_value("auto"), "auto, v1 (freezer) or v2 (cgroup.freeze)")
        ("rt-priority", po::value(&c.freeze.rt_priority)->default_value(0),
         "run the injector SCHED_FIFO at this priority (0: normal); where that is not "
         "permitted (no CAP_SYS_NICE, RLIMIT_RTPRIO too low) it runs at normal priority, with "
         "one warning")
        ("vcpu-state", po::value(&c.freeze.vcpu_state),
         "the guest's shared region file (/dev/shm/spinlab-NAME, not a symbolic link): set each "
         "frozen vCPU's 'preempted' word there, from the freeze to the thaw")
        ("vcpu-state-latency-json", po::value(&c.freeze.vcpu_state_latency_json),
         "write the words' store latencies (from the freeze or thaw request) here as JSON at exit");
    return g;
}

po::options_description pin_group(Command& c, Raw& r) {
    po::options_description g("Pin");
    g.add_options()
        ("cpus", po::value(&r.cpus)->required(), "host CPUs; thread i gets the i-th (round robin)")
        ("all", po::bool_switch(&c.pin.all), "every thread may use every listed CPU");
    return g;
}

po::options_description timeline_group(Command& c, Raw& r) {
    po::options_description g("Timeline (sched_switch)");
    g.add_options()
        ("out", po::value(&c.timeline.out_csv), "CSV of run intervals (default stdout)")
        ("trace-clock", po::value(&c.timeline.clock)->default_value("x86-tsc"), "x86-tsc or mono")
        ("buffer-kb", po::value(&c.timeline.buffer_kb)->default_value(2048), "per-CPU trace buffer")
        ("raw-out", po::value(&c.timeline.raw_out), "also save the raw trace text here")
        ("phase", po::value(&c.timeline.phase), "phase name written in every row (spinlab-run's results)")
        ("rep", po::value(&c.timeline.rep)->default_value(0), "repetition written in every row")
        ("freezes", po::value(&c.timeline.freezes),
         "spinlab-load freeze's record (--out): time inside each freeze's effective window is "
         "written as state frozen; read when the timeline ends")
        ("neighbour", po::value(&r.neighbours)->composing(),
         "NAME:TID[,TID...] (repeatable): a neighbour VM's vCPU threads, the i-th TID its vCPU i; an "
         "off interval whose CPU went to one is classed neighbour-vcpu with that VM and vCPU (column "
         "preemptor; hogs are found in the ledgers of --state-dir)")
        ("no-switch-records", po::bool_switch(&r.no_switch_records),
         "trace only: do not fill the switches sched_switch lacks from the threads' perf switch "
         "records (they stay unknown)")
        ("vcpu-state", po::value(&c.timeline.vcpu_state),
         "the guest's shared region file (/dev/shm/spinlab-NAME, not a symbolic link): keep each "
         "vCPU's 'preempted' word there from its thread's switches while tracing")
        ("vcpu-state-period-us", po::value(&c.timeline.vcpu_state_period_us)->default_value(1000),
         "how often the words' publisher reads the switches (the words lag the switches by up "
         "to this, plus its wake-up)")
        ("vcpu-state-latency-json", po::value(&c.timeline.vcpu_state_latency_json),
         "write the words' store latencies (from the switch) here as JSON at exit");
    return g;
}

// Every option group of a command, bound to `c` and `r`.
po::options_description describe(const std::string& name, Command& c, Raw& r) {
    po::options_description all;
    all.add(session_group(c, r));
    if (name == "cleanup") return all;
    if (name == "run-dir") {
        po::options_description g("run-dir");
        g.add_options()("help,h", po::bool_switch(&c.help), "this help");
        return g;
    }
    if (name == "libvirt-args") {
        po::options_description g("libvirt metadata");
        g.add_options()
            ("domain-xml", po::value(&c.domain_xml)->required(), "domain XML file, '-' for stdin")
            ("qemu-pid", po::value(&c.qemu_pid)->required(), "the domain's QEMU pid");
        all.add(g);
        return all;
    }
    if (name != "hog") all.add(thread_group(r));
    if (name != "pin") {
        po::options_description t("Timing");
        t.add_options()("duration", po::value(duration_target(c))->default_value(0),
                        "seconds to run; 0 runs until SIGINT/SIGTERM");
        all.add(t);
    }
    if (name == "hog") all.add(hog_group(c, r));
    else if (name == "throttle") all.add(throttle_group(c, r));
    else if (name == "freeze") all.add(freeze_group(c, r));
    else if (name == "pin") all.add(pin_group(c, r));
    else if (name == "timeline") all.add(timeline_group(c, r));
    return all;
}

const char* summary(const std::string& name) {
    if (name == "hog") return "a compute-bound process per host CPU, pinned, duty cycle, nice";
    if (name == "throttle") return "cut threads' CPU bandwidth with the cgroup cpu controller";
    if (name == "freeze") return "freeze threads for D ms every P ms, record each freeze";
    if (name == "pin") return "pin threads to host CPUs";
    if (name == "timeline") return "when each thread ran and when not (sched_switch, host TSC)";
    if (name == "cleanup") return "remove what dead spinlab-load processes left behind";
    if (name == "run-dir")
        return "print the run directory (ledgers, VMs): $SPINLAB_RUN_DIR, /run/spinlab for root, else the user's";
    return "print the commands a libvirt domain's <metadata> asks for";
}

const char* examples(const std::string& name) {
    if (name == "hog") {
        return "  spinlab-load hog --duration 10                 # a busy loop on every CPU\n"
               "  spinlab-load hog --cpus 1 --duty 50 --nice 5   # half of CPU 1 until Ctrl-C\n";
    }
    if (name == "throttle") {
        return "  spinlab-load throttle --qemu-pid 4242 --vcpus 1 --quota-pct 30 --duration 20\n"
               "  spinlab-load throttle --tid 5001,5002 --quota-pct 50 --cgroup v2\n";
    }
    if (name == "freeze") {
        return "  spinlab-load freeze --qemu-pid 4242 --vcpus 0 --freeze-ms 10 --period-ms 100 \\\n"
               "      --duration 8 --out freezes.csv\n"
               "  spinlab-load freeze --qmp /run/vm.qmp --schedule poisson --seed 7 --stagger\n"
               "  spinlab-load freeze --qemu-pid 4242 --vcpus 1 --vcpu-state /dev/shm/spinlab-lab1\n";
    }
    if (name == "pin") {
        return "  spinlab-load pin --qemu-pid 4242 --cpus 0,1       # vCPU i on CPU i\n"
               "  spinlab-load pin --tid 5001,5002 --cpus 1 --all\n";
    }
    if (name == "timeline") {
        return "  spinlab-load timeline --qemu-pid 4242 --duration 8 --out timeline.csv\n"
               "  spinlab-load timeline --qemu-pid 4242 --freezes freezes.csv --phase freeze-30ms --rep 1 \\\n"
               "      --out timeline.csv   # stop freeze first: its effective windows become state frozen\n"
               "  spinlab-load timeline --qmp /run/vm.qmp --trace-clock mono --out t.csv\n"
               "  spinlab-load timeline --qemu-pid 4242 --neighbour vm2:5001,5002 --out t.csv  # preemptor classes\n"
               "  spinlab-load timeline --qemu-pid 4242 --vcpu-state /dev/shm/spinlab-lab1 --out t.csv\n";
    }
    if (name == "cleanup") return "  spinlab-load cleanup\n";
    if (name == "run-dir")
        return "  spinlab-load run-dir            # where this user's VMs and ledgers live\n"
               "  # a user other than root: $XDG_RUNTIME_DIR/spinlab, else /run/user/<uid>/spinlab when that\n"
               "  # directory is the user's, else ${TMPDIR:-/tmp}/spinlab-<uid> (made 0700; refused, naming\n"
               "  # its owner, when another user could control it)\n";
    return "  spinlab-load libvirt-args --domain-xml - --qemu-pid 4242 < domain.xml\n";
}

void convert(Command& c, const Raw& r) {
    // Resolved here, not as the option's default: a refused run directory (run_dir.h) throws,
    // and the help must still print.
    if (c.session.state_dir.empty()) c.session.state_dir = default_state_dir();
    TargetSpec targets;
    for (const std::string& t : r.tids) {
        for (int tid : parse_id_sequence(t, "tid")) {
            if (tid <= 0) throw LoadError("--tid " + t + ": thread ids are positive");
            targets.tids.push_back(tid);
        }
    }
    targets.qemu_pid = r.qemu_pid;
    targets.qmp_socket = r.qmp;
    if (!r.vcpus.empty()) targets.vcpus = parse_id_list(r.vcpus, "vcpus", 4095);
    auto ms = [](double v) { return v <= 0 ? 0 : static_cast<uint64_t>(v * 1e6); };
    if (c.name == "hog") {
        if (!r.cpus.empty()) c.hog.cpus = parse_id_list(r.cpus, "cpus", CPU_SETSIZE - 1);
        validate_hog(c.hog);
    } else if (c.name == "throttle") {
        c.throttle.targets = targets;
        c.throttle.method = parse_cgroup_method(r.cgroup, "cgroup");
        validate_throttle(c.throttle);
    } else if (c.name == "freeze") {
        c.freeze.targets = targets;
        c.freeze.method = parse_cgroup_method(r.cgroup, "cgroup");
        for (auto [value, option] : {std::pair{r.freeze_ms, "freeze-ms"}, {r.period_ms, "period-ms"},
                                     {r.freeze_max_ms, "freeze-max-ms"}, {r.phase_ms, "phase-ms"}}) {
            if (value < 0) throw LoadError(std::string("--") + option + " must not be negative");
        }
        ScheduleParams& s = c.freeze.schedule;
        s.kind = parse_schedule_kind(r.schedule, "schedule");
        s.freeze_ns = ms(r.freeze_ms);
        s.freeze_max_ns = ms(r.freeze_max_ms);
        s.period_ns = ms(r.period_ms);
        s.phase_ns = ms(r.phase_ms);
        s.seed = r.seed;
        validate_freeze(c.freeze);
    } else if (c.name == "pin") {
        c.pin.targets = targets;
        c.pin.cpus = parse_id_list(r.cpus, "cpus", CPU_SETSIZE - 1);
        validate_target_spec(targets);
    } else if (c.name == "timeline") {
        c.timeline.targets = targets;
        c.timeline.switch_records = !r.no_switch_records;
        c.timeline.neighbours.clear();
        for (const std::string& n : r.neighbours) c.timeline.neighbours.push_back(parse_neighbour(n));
        c.timeline.hog_state_dir = c.session.state_dir;
        validate_timeline(c.timeline);
    } else if (c.name == "libvirt-args") {
        if (c.qemu_pid <= 0) throw LoadError("--qemu-pid must be a positive pid");
    }
}
}  // namespace

std::string command_named(const std::string& name) {
    for (auto [old, now] : kOldCommandNames)
        if (name == old) return now;
    return std::find(kCommands.begin(), kCommands.end(), name) == kCommands.end() ? "" : name;
}

bool is_flag_option(const std::string& command, const std::string& option) {
    Command c;
    c.name = command_named(command);
    Raw r;
    po::options_description d = describe(c.name, c, r);
    const po::option_description* o = d.find_nothrow(option, false);
    return o && o->semantic()->max_tokens() == 0;
}

std::string usage_text(const std::string& command) {
    std::ostringstream out;
    if (command.empty()) {
        out << "Usage: spinlab-load <command> [options]\n\n"
               "Host-side load and preemption for spinlab VMs. Nothing it starts or creates\n"
               "outlives it (hog processes, cgroups, trace instances, frozen threads), on normal\n"
               "exit, SIGINT, SIGTERM, parent death, or even SIGKILL (a guardian cleans up).\n\n"
               "Commands:\n";
        for (const std::string& name : kCommands) {
            char line[160];
            std::snprintf(line, sizeof line, "  %-13s %s\n", name.c_str(), summary(name));
            out << line;
        }
        for (auto [old, name] : kOldCommandNames) {
            char line[160];
            std::snprintf(line, sizeof line, "  %-13s old name of %s\n", old, name);
            out << line;
        }
        out << "\n'spinlab-load <command> --help' lists a command's options.\n\nEXAMPLES\n";
        for (const char* name : {"hog", "freeze", "timeline"}) out << examples(name);
        return out.str();
    }
    Command c;
    c.name = command_named(command);
    Raw r;
    out << "Usage: spinlab-load " << c.name << " [options]\n" << summary(c.name) << "\n";
    for (auto [old, name] : kOldCommandNames)
        if (c.name == name) out << "(" << old << ": old name of " << name << ")\n";
    out << "\n" << describe(c.name, c, r) << "\nEXAMPLES\n" << examples(c.name);
    return out.str();
}

Command parse_command_line(const std::vector<std::string>& args) {
    Command c;
    if (args.empty()) throw LoadError("no command given");
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        c.help = true;
        c.help_text = usage_text("");
        return c;
    }
    c.name = command_named(args[0]);
    if (c.name.empty()) throw LoadError("unknown command '" + args[0] + "'");
    Raw r;
    po::options_description desc = describe(c.name, c, r);
    po::variables_map vm;
    try {
        std::vector<std::string> rest(args.begin() + 1, args.end());
        po::store(po::command_line_parser(rest).options(desc).run(), vm);
        if (vm.count("help") && vm["help"].as<bool>()) {
            c.help = true;
            c.help_text = usage_text(c.name);
            return c;
        }
        if (vm.count("config")) {
            const std::string file = vm["config"].as<std::string>();
            std::ifstream in(file);
            if (!in) throw LoadError("--config " + file + ": cannot open");
            po::store(po::parse_config_file(in, desc), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw LoadError(c.name + ": " + e.what());
    }
    convert(c, r);
    return c;
}

int run_command(const Command& c) {
    if (c.help) {
        std::fputs(c.help_text.c_str(), stdout);
        return 0;
    }
    if (c.name == "pin") return run_pin(c.pin);
    if (c.name == "run-dir") {
        std::printf("%s\n", spinlab::run_dir().c_str());
        return 0;
    }
    if (c.name == "cleanup") {
        CleanupReport report = cleanup_stale(c.session.state_dir, std::nullopt);
        for (const std::string& r : report.removed) std::printf("removed %s\n", r.c_str());
        for (const std::string& p : report.problems) std::fprintf(stderr, "spinlab-load: %s\n", p.c_str());
        if (report.removed.empty()) std::printf("nothing stale\n");
        return report.problems.empty() ? 0 : 1;
    }
    if (c.name == "libvirt-args") {
        std::string xml;
        if (c.domain_xml == "-") {
            xml.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        } else {
            xml = read_file(c.domain_xml);
        }
        std::fputs(format_command_lines(load_commands_from_domain_xml(xml, c.qemu_pid)).c_str(), stdout);
        return 0;
    }
    Session session(c.session);
    int code = 0;
    if (!session.stopped()) {
        if (c.name == "hog") code = run_hog(session, c.hog);
        else if (c.name == "throttle") code = run_throttle(session, c.throttle);
        else if (c.name == "freeze") code = run_freeze(session, c.freeze);
        else if (c.name == "timeline") code = run_timeline(session, c.timeline);
    }
    std::vector<std::string> problems = session.finish();
    for (const std::string& p : problems) std::fprintf(stderr, "spinlab-load: cleanup: %s\n", p.c_str());
    return problems.empty() ? code : 1;
}

int run_cli(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    Command c;
    try {
        c = parse_command_line(args);
    } catch (const LoadError& e) {
        std::fprintf(stderr, "spinlab-load: %s\n\n", e.what());
        std::fputs(usage_text(args.empty() ? "" : command_named(args[0])).c_str(), stderr);
        return 2;
    } catch (const std::exception& e) {  // the run directory refused (hostlib/run_dir.h)
        std::fprintf(stderr, "spinlab-load: %s\n", e.what());
        return 2;
    }
    try {
        return run_command(c);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "spinlab-load %s: %s\n", c.name.c_str(), e.what());
        return 1;
    }
}

}  // namespace spinlab::load
