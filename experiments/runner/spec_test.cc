// experiments/runner/spec_test.cc: every bad key, value and range gives its own message
// (golden), good specs parse to the fields, the command line wins over the file, and to_ini
// reads back to the same spec.
#include "spec.h"
#include "vm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace spinlab::run {
namespace {

ParsedSpec parse(const std::vector<std::string>& args) {
    std::vector<std::string> a{"spinlab-run"};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (auto& s : a) argv.push_back(s.c_str());
    return parse_spec(int(argv.size()), argv.data());
}

ParsedSpec parse(std::initializer_list<std::string> args) { return parse(std::vector<std::string>(args)); }

std::string error_of(std::initializer_list<std::string> args) {
    try {
        parse(args);
    } catch (const SpecError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string write_spec(const std::string& text) {
    static int n = 0;
    std::string path = testing::TempDir() + "spec_test_" + std::to_string(getpid()) + "_" +
                       std::to_string(n++) + ".ini";
    std::ofstream(path) << text;
    return path;
}

const std::string kPhases = "--run.phases=idle-host";

TEST(SpecParse, Defaults) {
    ParsedSpec p = parse({kPhases});
    EXPECT_EQ(p.spec.vm.cpus, 2u);
    EXPECT_EQ(p.spec.vm.accel, "auto");
    EXPECT_EQ(p.spec.run.repetitions, 3u);
    EXPECT_EQ(p.spec.run.order, Order::kAbba);
    ASSERT_EQ(p.spec.run.phases.size(), 1u);
    EXPECT_EQ(p.spec.run.phases[0].name(), "idle-host");
    EXPECT_DOUBLE_EQ(p.spec.vm.channel_timeout_s, 5);
}

TEST(SpecParse, FileAndCommandLineOverride) {
    std::string f = write_spec(
        "[vm]\ncpus = 4\nlock = ticket\npin = 0,1,0,1\n[run]\nphases = idle-host, host-load, "
        "freeze-10ms, throttle-50%\nduration = 1.5\nrepetitions = 2\norder = shuffle\nseed = 9\n"
        "[workload]\nargs = --locks 2\n[output]\ndir = /tmp/x\n");
    ParsedSpec p = parse({"--spec", f, "--vm.lock", "mcs", "--vm.pin", "1,1,1,1", "--vm.channel-timeout", "60"});
    EXPECT_DOUBLE_EQ(p.spec.vm.channel_timeout_s, 60);
    EXPECT_EQ(p.spec.vm.cpus, 4u);
    EXPECT_EQ(p.spec.vm.lock, "mcs");  // the command line wins
    EXPECT_EQ(p.spec.vm.pin, (std::vector<uint32_t>{1, 1, 1, 1}));  // sharing a host CPU is fine
    ASSERT_EQ(p.spec.run.phases.size(), 4u);
    EXPECT_EQ(p.spec.run.phases[2].freeze_ms, 10u);
    EXPECT_EQ(p.spec.run.phases[3].quota_pct, 50u);
    EXPECT_DOUBLE_EQ(p.spec.run.duration_s, 1.5);
    EXPECT_EQ(p.spec.run.order, Order::kShuffle);
    EXPECT_EQ(p.spec.run.seed, 9u);
    EXPECT_EQ(p.spec.output.dir, "/tmp/x");
}

TEST(SpecParse, ToIniReadsBack) {
    ParsedSpec a = parse({kPhases + ",host-load,freeze-5ms", "--vm.cpus", "3", "--vm.pin", "0,1,0",
                          "--vm.pause", "off", "--workload.args", "--locks 4 --pattern spread",
                          "--run.warmup", "0.5", "--output.run-id", "abc"});
    std::string f = write_spec(to_ini(a.spec));
    ParsedSpec b = parse({"--spec", f});
    EXPECT_EQ(to_ini(b.spec).substr(to_ini(b.spec).find('\n')), to_ini(a.spec).substr(to_ini(a.spec).find('\n')));
    EXPECT_EQ(b.spec.vm.pin, a.spec.vm.pin);
    EXPECT_FALSE(b.spec.vm.pause);
    EXPECT_EQ(b.spec.workload.args, "--locks 4 --pattern spread");
    EXPECT_FALSE(b.spec.run.vcpu_state);  // the default
    ParsedSpec on = parse({kPhases, "--run.vcpu-state", "on"});
    EXPECT_TRUE(on.spec.run.vcpu_state);
    EXPECT_TRUE(parse({"--spec", write_spec(to_ini(on.spec))}).spec.run.vcpu_state);
}

// The freeze keys' old names (issue 53), run.preempt-period-ms, run.preempt-rt-priority and
// run.preempt-vcpus, and the phase preempt-Nms, in a spec file or on the command line: read as
// the keys and the phase they became; spec.ini (to_ini) says the names.
TEST(SpecParse, OldFreezeNamesAreReadAsTheirKeys) {
    const std::string old = write_spec("[vm]\ncpus = 2\n[run]\nphases = idle-host, preempt-10ms\n"
                                       "preempt-period-ms = 50\npreempt-vcpus = 1\npreempt-rt-priority = 0\n");
    ParsedSpec p = parse({"--spec", old});
    ASSERT_EQ(p.spec.run.phases.size(), 2u);
    EXPECT_EQ(p.spec.run.phases[1].kind, PhaseKind::kFreeze);
    EXPECT_EQ(p.spec.run.phases[1].name(), "freeze-10ms");
    EXPECT_EQ(p.spec.run.freeze_period_ms, 50u);
    EXPECT_EQ(p.spec.run.freeze_vcpus, (std::vector<uint32_t>{1}));
    EXPECT_EQ(p.spec.run.freeze_rt_priority, 0u);
    const std::string ini = to_ini(p.spec);
    EXPECT_NE(ini.find("phases = idle-host,freeze-10ms\n"), std::string::npos) << ini;
    EXPECT_NE(ini.find("freeze-period-ms = 50\nfreeze-rt-priority = 0\nfreeze-vcpus = 1\n"), std::string::npos)
        << ini;
    EXPECT_EQ(ini.find("preempt", ini.find('\n')), std::string::npos) << ini;
    // On the command line too; and where a key is given by both names, the command line's wins.
    ParsedSpec c = parse({kPhases, "--run.preempt-period-ms", "40", "--run.preempt-vcpus", "0,1",
                          "--run.preempt-rt-priority", "5"});
    EXPECT_EQ(c.spec.run.freeze_period_ms, 40u);
    EXPECT_EQ(c.spec.run.freeze_vcpus, (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(c.spec.run.freeze_rt_priority, 5u);
    EXPECT_EQ(parse({"--spec", old, "--run.freeze-period-ms", "60"}).spec.run.freeze_period_ms, 60u);
    const std::string now = write_spec("[run]\nphases = freeze-10ms\nfreeze-period-ms = 50\n");
    EXPECT_EQ(parse({"--spec", now, "--run.preempt-period-ms", "70"}).spec.run.freeze_period_ms, 70u);
    // Both names in one file: one of them is a mistake.
    const std::string both = write_spec("[run]\nphases = idle-host\nfreeze-vcpus = 0\npreempt-vcpus = 1\n");
    EXPECT_EQ(error_of({"--spec", both}), "[run] freeze-vcpus in " + both + " and [run] preempt-vcpus in " + both +
                                              ", its old name, are both given: give one");
    // A relation's error names the key as it was given.
    const std::string three = write_spec("[run]\nphases = idle-host\npreempt-vcpus = 3\n");
    EXPECT_EQ(error_of({"--spec", three}),
              "[run] preempt-vcpus in " + three + " = '3': vCPU 3 does not exist with vm.cpus = 2");
}

TEST(SpecParse, TraceSection) {
    // The default: a real-time session of long waits only, the collector's buffer defaults.
    ParsedSpec d = parse({kPhases});
    EXPECT_TRUE(d.spec.trace.enabled());
    EXPECT_EQ(d.spec.trace.params.enable_flags, kTraceGroupLongWait);
    EXPECT_EQ(d.spec.trace.params.buffer_size, 65536u);
    EXPECT_EQ(d.spec.trace.params.logger_mode, uint32_t(TraceLoggerMode::kRealTime));
    std::string f = write_spec("[trace]\nenable = spinlock, long-wait,cswitch\nbuffer-size = 8192\n"
                               "min-buffers = 3\nmax-buffers = 9\nflush-timer = 0\nmode = circular\n"
                               "profile-interval = 7\n");
    ParsedSpec p = parse({"--spec", f, kPhases, "--trace.max-buffers", "12"});
    const TraceSessionInformation& t = p.spec.trace.params;
    EXPECT_EQ(t.enable_flags, kTraceGroupSpinlock | kTraceGroupLongWait | kTraceGroupContextSwitch);
    EXPECT_EQ(t.buffer_size, 8192u);
    EXPECT_EQ(t.minimum_buffers, 3u);
    EXPECT_EQ(t.maximum_buffers, 12u);  // the command line wins
    EXPECT_EQ(t.flush_timer_ms, 0u);
    EXPECT_EQ(t.logger_mode, uint32_t(TraceLoggerMode::kCircular));
    EXPECT_EQ(t.profile_interval, 7u);
    // to_ini reads back to the same session.
    ParsedSpec b = parse({"--spec", write_spec(to_ini(p.spec))});
    EXPECT_EQ(std::memcmp(&b.spec.trace.params, &t, sizeof t), 0) << to_ini(p.spec);
    EXPECT_NE(to_ini(p.spec).find("[trace]\nenable = spinlock,cswitch,long-wait\nbuffer-size = 8192\n"),
              std::string::npos);
    // none: no session; the buffer keys are not checked against each other then.
    ParsedSpec n = parse({kPhases, "--trace.enable", "none", "--trace.min-buffers", "9", "--trace.max-buffers", "4"});
    EXPECT_FALSE(n.spec.trace.enabled());
    EXPECT_FALSE(parse({"--spec", write_spec(to_ini(n.spec))}).spec.trace.enabled());
    // export: none by default; a list that survives spec.ini.
    EXPECT_TRUE(d.spec.trace.exports.empty());
    ParsedSpec x = parse({kPhases, "--trace.export", "perfetto, ctf"});
    EXPECT_EQ(x.spec.trace.exports, (std::vector<std::string>{"perfetto", "ctf"}));
    EXPECT_NE(to_ini(x.spec).find("export = perfetto,ctf\n"), std::string::npos);
    EXPECT_EQ(parse({"--spec", write_spec(to_ini(x.spec))}).spec.trace.exports, x.spec.trace.exports);
    EXPECT_NE(to_ini(d.spec).find("export = none\n"), std::string::npos);
}

TEST(SpecParse, TraceStacks) {
    // Default: no stacks, the guest's defaults for the rest.
    ParsedSpec d = parse({kPhases});
    EXPECT_EQ(d.spec.trace.stacks.stack_flags, 0u);
    EXPECT_EQ(d.spec.trace.stacks.caching, 1u);
    EXPECT_EQ(d.spec.trace.stacks.max_depth, 32u);
    EXPECT_NE(to_ini(d.spec).find("stack-enable = none\nstack-caching = on\nstack-depth = 32\n"
                                  "stack-buckets = 256\nstack-cache-size = 3145728\n"),
              std::string::npos);
    std::string f = write_spec("[trace]\nenable = spinlock,long-wait,profile\nstack-enable = long-wait, profile\n"
                               "stack-caching = off\nstack-depth = 16\nstack-buckets = 5000\n");
    ParsedSpec p = parse({"--spec", f, kPhases, "--trace.stack-cache-size", "1"});
    const TraceStackInformation& s = p.spec.trace.stacks;
    EXPECT_EQ(s.stack_flags, kTraceGroupLongWait | kTraceGroupProfile);
    EXPECT_EQ(s.caching, 0u);
    EXPECT_EQ(s.max_depth, 16u);
    EXPECT_EQ(s.bucket_count, 4096u);           // clamped, as the guest does (like ETW)
    EXPECT_EQ(s.cache_size, kTraceMinStackCacheSize);  // likewise
    // to_ini reads back to the same settings.
    ParsedSpec b = parse({"--spec", write_spec(to_ini(p.spec))});
    EXPECT_EQ(std::memcmp(&b.spec.trace.stacks, &s, sizeof s), 0) << to_ini(p.spec);
}

TEST(SpecParse, KernelCommandLine) {
    ParsedSpec p = parse({kPhases, "--vm.lock", "pv", "--vm.clock", "cpuid", "--vm.hz", "250",
                          "--workload.args", "--locks 1 --duration-ms 0", "--workload.kmix", "off"});
    EXPECT_EQ(kernel_append(p.spec),
              "lock=pv clock=cpuid pause=on long-wait=1048576 hz=250 init=/bin/lockbench --locks 1 --duration-ms 0");
}

TEST(SpecParse, TheLongWaitThresholdIsAVmKeyWithTheAbisDefault) {
    EXPECT_EQ(parse({kPhases}).spec.vm.long_wait, kDefaultLongWaitThreshold);
    ParsedSpec p = parse({"--spec", write_spec("[vm]\nlong-wait = 4194304\n"), kPhases});
    EXPECT_NE(kernel_append(p.spec).find(" long-wait=4194304 "), std::string::npos) << kernel_append(p.spec);
    EXPECT_EQ(parse({"--spec", write_spec(to_ini(p.spec))}).spec.vm.long_wait, 4194304u);
    EXPECT_THROW(parse({kPhases, "--vm.long-wait", "0"}), SpecError);
    EXPECT_THROW(parse({kPhases, "--vm.append", "long-wait=5"}), SpecError);
}

TEST(SpecParse, TraceSpinlockParametersAreBootOptions) {
    // Unset: nothing on the command line, nothing in spec.ini (the kernel's defaults).
    ParsedSpec d = parse({kPhases});
    EXPECT_EQ(kernel_append(d.spec).find("threshold"), std::string::npos);
    EXPECT_EQ(to_ini(d.spec).find("sample-rate"), std::string::npos);
    std::string f = write_spec("[trace]\nacquire-sample-rate = 10000\nhold-threshold = 2000000\n");
    ParsedSpec p = parse({"--spec", f, kPhases, "--trace.contention-sample-rate", "4",
                          "--trace.spin-threshold", "9", "--workload.kmix", "off"});
    EXPECT_EQ(p.spec.trace.spinlock[0], 9u);
    EXPECT_EQ(p.spec.trace.spinlock[1], 10000u);
    EXPECT_EQ(p.spec.trace.spinlock[2], 4u);
    EXPECT_EQ(p.spec.trace.spinlock[3], 2000000u);
    EXPECT_NE(kernel_append(p.spec).find(" spin-threshold=9 acquire-sample-rate=10000 "
                                         "contention-sample-rate=4 hold-threshold=2000000 init="),
              std::string::npos) << kernel_append(p.spec);
    // spec.ini reads back to the same parameters.
    EXPECT_EQ(parse({"--spec", write_spec(to_ini(p.spec))}).spec.trace.spinlock, p.spec.trace.spinlock);
}

TEST(SpecParse, ALinuxGuestRunsTheAgentsWorkloadWithItsLockMode) {
    const std::vector<std::string> linux_args{kPhases, "--vm.guest", "linux", "--workload.program", "hackbench",
                                              "--workload.kmix", "off"};
    auto with = [&](std::vector<std::string> more) {  // linux_args, a key given in `more` replaced
        std::vector<std::string> a;
        for (size_t i = 0; i < linux_args.size(); ++i) {
            const bool replaced = i + 1 < linux_args.size() && linux_args[i].rfind("--", 0) == 0 &&
                                  std::find(more.begin(), more.end(), linux_args[i]) != more.end();
            if (replaced) ++i;
            else a.push_back(linux_args[i]);
        }
        a.insert(a.end(), more.begin(), more.end());
        return a;
    };
    ParsedSpec p = parse(with({"--vm.lock", "mcs", "--workload.args", "spinlab.hackbench=2x10"}));
    EXPECT_EQ(kernel_append(p.spec), "spinlab.workload=hackbench spinlab.seconds=0 spinlab.trace=1 spinlab.hackbench=2x10");
    EXPECT_EQ(workload_line(p.spec), "hackbench spinlab.hackbench=2x10");
    EXPECT_TRUE(p.spec.workload.throughput_classes.empty());  // its one class counts waits, not operations
    const std::vector<std::string> vm = spinlab_vm_argv(p.spec, "spinlab-vm", "lx", "/r");
    EXPECT_NE(std::find(vm.begin(), vm.end(), "--guest"), vm.end());
    EXPECT_EQ(*(std::find(vm.begin(), vm.end(), "--lock") + 1), "mcs");
    EXPECT_EQ(parse({"--spec", write_spec(to_ini(p.spec))}).spec.vm.guest, "linux");
    // What spinlab's kernel alone has is refused, naming the key.
    auto error = [&](std::vector<std::string> more) {
        try {
            parse(with(more));
        } catch (const SpecError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(error({"--vm.lock", "ticket"}).find("vm.lock = 'ticket': a Linux guest's lock is mcs"), std::string::npos);
    EXPECT_NE(error({"--vm.clock", "cpuid"}).find("vm.clock = 'cpuid'"), std::string::npos);
    EXPECT_NE(error({"--vm.hz", "250"}).find("vm.hz"), std::string::npos);
    EXPECT_NE(error({"--trace.enable", "long-wait,profile"}).find("trace.enable"), std::string::npos);
    EXPECT_NE(error({"--workload.program", "lockbench"}).find("hackbench or forkexec"), std::string::npos);
    EXPECT_NE(error({"--workload.kmix", "on"}).find("workload.kmix = off"), std::string::npos);
    EXPECT_NE(error({"--workload.args", "-g 4"}).find("'-g' is not one"), std::string::npos);
    EXPECT_EQ(error({}), "accepted");
    // spinlab's kernel is untouched by the key.
    EXPECT_EQ(parse({kPhases}).spec.vm.guest, "spinlab");
    const std::vector<std::string> plain = spinlab_vm_argv(parse({kPhases}).spec, "spinlab-vm", "x", "/r");
    EXPECT_EQ(std::find(plain.begin(), plain.end(), "--guest"), plain.end());
}

struct Golden {
    std::vector<std::string> args;
    std::string message;
};

class SpecErrors : public testing::TestWithParam<Golden> {};

TEST_P(SpecErrors, NamesWhatIsWrong) {
    const Golden& g = GetParam();
    std::vector<std::string> a{"spinlab-run"};
    a.insert(a.end(), g.args.begin(), g.args.end());
    std::vector<const char*> argv;
    for (auto& s : a) argv.push_back(s.c_str());
    try {
        parse_spec(int(argv.size()), argv.data());
        FAIL() << "accepted; expected: " << g.message;
    } catch (const SpecError& e) {
        EXPECT_EQ(std::string(e.what()), g.message);
    }
}

INSTANTIATE_TEST_SUITE_P(
    CommandLine, SpecErrors,
    testing::Values(
        Golden{{}, "no phases: set [run] phases (e.g. idle-host,host-load) or --run.phases"},
        Golden{{"--vm.cpu", "2"},
               "unknown key 'cpu' in section [vm]; its keys are name, attach, guest, cpus, memory, "
               "accel, backend, lock, clock, pause, long-wait, hz, pin, kernel, initrd, append, boot-timeout, channel-timeout"},
        Golden{{"--cpus", "2"}, "unknown option '--cpus'; see --help"},
        Golden{{kPhases, "--vm.cpus", "0"}, "--vm.cpus = '0': must be a whole number from 1 to 64"},
        Golden{{kPhases, "--vm.cpus", "65"}, "--vm.cpus = '65': must be a whole number from 1 to 64"},
        Golden{{kPhases, "--vm.cpus", "-1"}, "--vm.cpus = '-1': must be a whole number from 1 to 64"},
        Golden{{kPhases, "--vm.cpus", "2x"}, "--vm.cpus = '2x': must be a whole number from 1 to 64"},
        Golden{{kPhases, "--vm.memory", "32"},
               "--vm.memory = '32': must be a whole number from 64 to 65536"},
        Golden{{kPhases, "--vm.accel", "xen"}, "--vm.accel = 'xen': must be one of auto, kvm, tcg"},
        Golden{{kPhases, "--vm.backend", "vbox"}, "--vm.backend = 'vbox': must be one of qemu, libvirt"},
        Golden{{kPhases, "--vm.lock", "queued"},
               "--vm.lock = 'queued': must be one of tas, ticket, mcs, pv, pticket, pvmcs, student, pvqspin"},
        Golden{{kPhases, "--vm.clock", "hpet"},
               "--vm.clock = 'hpet': must be one of lfence, rdtscp, cpuid"},
        Golden{{kPhases, "--vm.pause", "maybe"}, "--vm.pause = 'maybe': must be on or off"},
        Golden{{kPhases, "--vm.hz", "5"},
               "--vm.hz = '5': must be 0 (the default) or from 10 to 10000"},
        Golden{{kPhases, "--vm.pin", "0"},
               "--vm.pin = '0': names 1 host CPUs for 2 vCPUs (vm.cpus): give one per vCPU"},
        Golden{{kPhases, "--vm.pin", "0,,1"},
               "--vm.pin = '0,,1': has an empty item: write numbers separated by commas"},
        Golden{{kPhases, "--run.freeze-vcpus", "0,0"}, "--run.freeze-vcpus = '0,0': names 0 twice"},
        Golden{{kPhases, "--vm.name", "a b"},
               "--vm.name = 'a b': must be 1 to 40 letters, digits, '-' or '_'"},
        Golden{{kPhases, "--vm.append", "init=/bin/sh"},
               "--vm.append = 'init=/bin/sh': must not set init=: the workload section does"},
        Golden{{kPhases, "--vm.boot-timeout", "0"},
               "--vm.boot-timeout = '0': must be a number of seconds from 1 to 3600"},
        Golden{{kPhases, "--vm.channel-timeout", "0.05"},
               "--vm.channel-timeout = '0.05': must be a number of seconds from 0.1 to 600"},
        Golden{{kPhases, "--workload.program", "/bin/lockbench"},
               "--workload.program = '/bin/lockbench': must be a program name from the guest's "
               "/bin, e.g. lockbench"},
        Golden{{kPhases, "--workload.args", "--name 'x y'"},
               "--workload.args = '--name 'x y'': must not contain quotes, tabs or newlines (the "
               "guest splits its command line on spaces and knows no quoting)"},
        Golden{{kPhases, "--workload.kmix", "2"}, "--workload.kmix = '2': must be on or off"},
        Golden{{"--run.phases", "idle-host,nap"},
               "--run.phases = 'idle-host,nap': unknown phase 'nap': one of idle-host, host-load, "
               "freeze-Nms (N from 1 to 10000), throttle-P% (P from 1 to 99), neighbours-N (N from 1 to 8)"},
        Golden{{"--run.phases", "idle-host,idle-host"},
               "--run.phases = 'idle-host,idle-host': names idle-host twice"},
        Golden{{"--run.phases", "freeze-0ms"},
               "--run.phases = 'freeze-0ms': 'freeze-0ms': the freeze must be 1 to 10000 ms"},
        Golden{{"--run.phases", "preempt-0ms"},
               "--run.phases = 'preempt-0ms': 'preempt-0ms': the freeze must be 1 to 10000 ms"},
        Golden{{"--run.phases", "freeze-10ms,preempt-10ms"},
               "--run.phases = 'freeze-10ms,preempt-10ms': names preempt-10ms twice"},
        Golden{{"--run.phases", "throttle-100%"},
               "--run.phases = 'throttle-100%': 'throttle-100%': the quota must be 1 to 99 percent"},
        Golden{{"--run.phases", "freeze-100ms"},
               "--run.phases = 'freeze-100ms': freeze-100ms freezes for at least the whole "
               "period (run.freeze-period-ms = 100)"},
        Golden{{"--run.phases", ""}, "--run.phases = '': must name at least one phase"},
        Golden{{kPhases, "--run.duration", "0"},
               "--run.duration = '0': must be a number of seconds above 0 and at most 86400"},
        Golden{{kPhases, "--run.duration", "abc"},
               "--run.duration = 'abc': must be a number of seconds above 0 and at most 86400"},
        Golden{{kPhases, "--run.warmup", "-1"},
               "--run.warmup = '-1': must be a number of seconds from 0 to 3600"},
        Golden{{kPhases, "--run.repetitions", "0"},
               "--run.repetitions = '0': must be a whole number from 1 to 100"},
        Golden{{kPhases, "--run.seed", "x"},
               "--run.seed = 'x': must be a whole number from 0 to 18446744073709551615"},
        Golden{{kPhases, "--run.order", "random"}, "--run.order = 'random': must be abba or shuffle"},
        Golden{{kPhases, "--run.freeze-period-ms", "1"},
               "--run.freeze-period-ms = '1': must be a whole number from 2 to 60000"},
        Golden{{kPhases, "--run.freeze-rt-priority", "100"},
               "--run.freeze-rt-priority = '100': must be a whole number from 0 to 99"},
        Golden{{kPhases, "--run.freeze-vcpus", "2"},
               "--run.freeze-vcpus = '2': vCPU 2 does not exist with vm.cpus = 2"},
        Golden{{kPhases, "--run.freeze-vcpus", ""},
               "--run.freeze-vcpus = '': must name at least one number"},
        // The old names (issue 53): their errors name them as given.
        Golden{{kPhases, "--run.preempt-period-ms", "1"},
               "--run.preempt-period-ms = '1': must be a whole number from 2 to 60000"},
        Golden{{kPhases, "--run.preempt-rt-priority", "100"},
               "--run.preempt-rt-priority = '100': must be a whole number from 0 to 99"},
        Golden{{kPhases, "--run.preempt-vcpus", "2"},
               "--run.preempt-vcpus = '2': vCPU 2 does not exist with vm.cpus = 2"},
        Golden{{kPhases, "--run.freeze-vcpus", "1", "--run.preempt-vcpus", "0"},
               "--run.freeze-vcpus and --run.preempt-vcpus, its old name, are both given: give one"},
        Golden{{kPhases, "--run.throttle-vcpus", "5"},
               "--run.throttle-vcpus = '5': vCPU 5 does not exist with vm.cpus = 2"},
        Golden{{kPhases, "--run.clock-samples", "65"},
               "--run.clock-samples = '65': must be a whole number from 0 to 64"},
        Golden{{kPhases, "--run.timeline", "sometimes"}, "--run.timeline = 'sometimes': must be on or off"},
        Golden{{kPhases, "--run.vcpu-state", "on", "--run.timeline", "off"},
               "--run.vcpu-state = on needs --run.timeline = on"},
        Golden{{kPhases, "--output.dir", ""}, "--output.dir = '': must name a directory"},
        Golden{{kPhases, "--output.run-id", "latest"},
               "--output.run-id = 'latest': must be letters, digits, '.', '-' or '_', not start "
               "with '.', and not be 'latest'"},
        Golden{{kPhases, "--output.run-id", "../x"},
               "--output.run-id = '../x': must be letters, digits, '.', '-' or '_', not start "
               "with '.', and not be 'latest'"},
        Golden{{kPhases, "--vm.cpus", "2", "--vm.cpus", "3"}, "--vm.cpus is given twice on the command line"},
        Golden{{kPhases, "--vm.attach", "lab1", "--vm.name", "x"},
               "vm.attach and vm.name both given: attach names the running VM to use, name the "
               "VM to start; give one"},
        Golden{{kPhases, "--trace.enable", "long-wait,locks"},
               "--trace.enable = 'long-wait,locks': unknown group 'locks'; groups: all, spinlock, "
               "cswitch, ready, syscall, profile, process, memory, long-wait, or none for no trace"},
        Golden{{kPhases, "--trace.buffer-size", "1000"},
               "--trace.buffer-size = '1000': must be a whole number from 4096 to 1048576"},
        Golden{{kPhases, "--trace.buffer-size", "5000"},
               "--trace.buffer-size = '5000': BufferSize must be a multiple of 4096"},
        Golden{{kPhases, "--trace.min-buffers", "1"},
               "--trace.min-buffers = '1': must be a whole number from 2 to 1024"},
        Golden{{kPhases, "--trace.min-buffers", "8", "--trace.max-buffers", "4"},
               "--trace.min-buffers = '8': MinimumBuffers must be at most MaximumBuffers "
               "(trace.max-buffers = 4)"},
        Golden{{kPhases, "--trace.flush-timer", "60001"},
               "--trace.flush-timer = '60001': must be a whole number from 0 to 60000"},
        Golden{{kPhases, "--trace.mode", "ring"},
               "--trace.mode = 'ring': must be one of real-time, circular, no-drop-stall"},
        Golden{{kPhases, "--trace.profile-interval", "0"},
               "--trace.profile-interval = '0': must be a whole number from 1 to 1000"},
        Golden{{kPhases, "--trace.export", "ctf,svg"},
               "--trace.export = 'svg': must be one of ctf, perfetto"},
        Golden{{kPhases, "--trace.export", "ctf,ctf"}, "--trace.export = 'ctf,ctf': names ctf twice"},
        Golden{{kPhases, "--trace.enable", "none", "--trace.export", "ctf"},
               "--trace.export = 'ctf': needs a trace (trace.enable is none)"},
        Golden{{kPhases, "--trace.stack-enable", "spinlock,memory"},
               "--trace.stack-enable = 'spinlock,memory': names memory: only spinlock, cswitch, ready, "
               "syscall, profile and long-wait events carry stacks"},
        Golden{{kPhases, "--trace.stack-enable", "locks"},
               "--trace.stack-enable = 'locks': unknown group 'locks'; groups: all, spinlock, cswitch, "
               "ready, syscall, profile, process, memory, long-wait, or none"},
        Golden{{kPhases, "--trace.stack-enable", "cswitch"},
               "--trace.stack-enable = 'cswitch': names cswitch, which trace.enable (long-wait) does not record"},
        Golden{{kPhases, "--trace.enable", "none", "--trace.stack-enable", "long-wait"},
               "--trace.stack-enable = 'long-wait': needs a trace (trace.enable is none)"},
        Golden{{kPhases, "--trace.acquire-sample-rate", "999"},
               "--trace.acquire-sample-rate = '999': must be a whole number from 1000 to 4294967295"},
        Golden{{kPhases, "--trace.hold-threshold", "4294967296"},
               "--trace.hold-threshold = '4294967296': must be a whole number from 1000000 to 4294967295"},
        Golden{{kPhases, "--vm.attach", "lab1", "--trace.spin-threshold", "5"},
               "--trace.spin-threshold = '5': SpinLockSpinThreshold is a boot option: it needs a VM that "
               "spinlab-run boots, not vm.attach"},
        Golden{{kPhases, "--trace.stack-depth", "257"},
               "--trace.stack-depth = '257': must be a whole number from 1 to 256"},
        Golden{{kPhases, "--trace.stack-caching", "yes"},
               "--trace.stack-caching = 'yes': must be one of on, off"},
        Golden{{"--spec", "/nonexistent/x.ini"}, "--spec /nonexistent/x.ini: cannot open it"}),
    // Readable test names (ctest lists them): the options, letters and digits only.
    [](const testing::TestParamInfo<Golden>& info) {
        std::string name = "case" + std::to_string(info.index);
        for (const std::string& a : info.param.args)
            for (char c : a) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        return name;
    });

TEST(SpecFileErrors, NameTheFileAndSection) {
    std::string f = write_spec("[vm]\ncpu = 2\n[run]\nphases = idle-host\n");
    EXPECT_EQ(error_of({"--spec", f}),
              "unknown key 'cpu' in section [vm] in " + f +
                  "; its keys are name, attach, guest, cpus, memory, accel, backend, lock, clock, pause, "
                  "long-wait, hz, pin, kernel, initrd, append, boot-timeout, channel-timeout");
    f = write_spec("[vmm]\ncpus = 2\n");
    EXPECT_EQ(error_of({"--spec", f}), "unknown section [vmm] in " + f +
                                           ": the sections are [vm], [workload], [run], [trace], [neighbours] and [output]");
    f = write_spec("cpus = 2\n");
    EXPECT_EQ(error_of({"--spec", f}),
              "'cpus' in " + f + " is outside any section: put it under [vm], [workload], [run], [trace], [neighbours] or [output]");
    f = write_spec("[vm]\ncpus = 2\ncpus = 3\n[run]\nphases = idle-host\n");
    EXPECT_EQ(error_of({"--spec", f}), f + ": 'cpus' appears twice in [vm]");
    f = write_spec("[vm]\ncpus = 100\n[run]\nphases = idle-host\n");
    EXPECT_EQ(error_of({"--spec", f}),
              "[vm] cpus in " + f + " = '100': must be a whole number from 1 to 64");
    // The same bad value from the command line names the option, not the file.
    EXPECT_EQ(error_of({"--spec", f, "--vm.cpus", "99"}),
              "--vm.cpus = '99': must be a whole number from 1 to 64");
    EXPECT_EQ(parse({"--spec", f, "--vm.cpus", "4"}).spec.vm.cpus, 4u);
}

TEST(SpecHelp, EndsWithExamples) {
    EXPECT_TRUE(parse({"--help"}).help);
    std::string u = usage_text();
    auto pos = u.rfind("EXAMPLES\n");
    ASSERT_NE(pos, std::string::npos);
    EXPECT_EQ(u.find('\n', pos + 9) != std::string::npos, true);
    EXPECT_NE(u.find("--vm.cpus"), std::string::npos);
    EXPECT_NE(u.find("--run.phases"), std::string::npos);
    // The freeze keys by their names; their old names only as such.
    EXPECT_NE(u.find("--run.freeze-period-ms"), std::string::npos);
    EXPECT_NE(u.find("--spec freeze --run.freeze-period-ms 50"), std::string::npos);
    for (const char* old : {"period-ms", "rt-priority", "vcpus"}) {
        const std::string line = std::string("--run.preempt-") + old;
        const size_t at = u.find(line);
        ASSERT_NE(at, std::string::npos) << line;
        EXPECT_NE(u.find(std::string("old name of run.freeze-") + old, at), std::string::npos) << u;
        EXPECT_EQ(u.find(line, at + 1), std::string::npos) << line << " said twice";
    }
    EXPECT_NE(u.find("  the phase preempt-Nms: old name of freeze-Nms\n"), std::string::npos) << u;
    EXPECT_NE(u.find("  --spec preempt: old name of --spec freeze\n"), std::string::npos) << u;
    // Nothing after the examples but example lines.
    EXPECT_EQ(u.find("Exit status", pos), std::string::npos);
}

TEST(SpecRepoFiles, ExampleSpecsParse) {
    for (const char* f : {"default.ini", "freeze.ini", "throttle.ini", "locks.ini", "wrk.ini", "neighbours.ini"}) {
        std::string path = std::string(SPINLAB_SOURCE_DIR) + "/experiments/" + f;
        EXPECT_NO_THROW(parse({"--spec", path})) << path;
    }
    ParsedSpec d = parse({"--spec", std::string(SPINLAB_SOURCE_DIR) + "/experiments/default.ini"});
    EXPECT_EQ(d.spec.vm.cpus, 2u);
    EXPECT_EQ(d.spec.vm.accel, "auto");
    EXPECT_EQ(d.spec.run.repetitions, 3u);
    ASSERT_EQ(d.spec.run.phases.size(), 2u);
    EXPECT_EQ(d.spec.run.phases[0].name(), "idle-host");
    EXPECT_EQ(d.spec.run.phases[1].name(), "host-load");
    EXPECT_TRUE(d.spec.workload.kmix);
    EXPECT_EQ(d.spec.workload.program, "lockbench");
}

}  // namespace
}  // namespace spinlab::run
