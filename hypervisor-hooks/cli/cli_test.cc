#include "cli.h"
#include "hostlib/run_dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

std::string error_of(const std::vector<std::string>& args) {
    try {
        parse_command_line(args);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "no error";
}

TEST(Cli, DefaultsOfFreeze) {
    Command c = parse_command_line({"freeze", "--tid", "100,101", "--duration", "3"});
    EXPECT_EQ(c.name, "freeze");
    EXPECT_EQ(c.freeze.targets.tids, (std::vector<int>{100, 101}));
    EXPECT_EQ(c.freeze.schedule.freeze_ns, 10'000'000u);
    EXPECT_EQ(c.freeze.schedule.period_ns, 100'000'000u);
    EXPECT_EQ(c.freeze.schedule.kind, ScheduleKind::kFixed);
    EXPECT_EQ(c.freeze.method, CgroupMethod::kAuto);
    EXPECT_DOUBLE_EQ(c.freeze.duration_s, 3);
    EXPECT_EQ(c.session.state_dir, spinlab::run_dir());  // collector/run_dir.h
    EXPECT_FALSE(c.session.survive_parent);
}

TEST(Cli, EveryCommandParsesItsOptions) {
    Command h = parse_command_line({"hog", "--cpus", "0", "--duty", "40", "--nice", "5", "--period-ms", "20"});
    EXPECT_EQ(h.hog.cpus, (std::vector<int>{0}));
    EXPECT_DOUBLE_EQ(h.hog.duty_pct, 40);
    EXPECT_EQ(h.hog.nice, 5);
    Command t = parse_command_line({"throttle", "--qemu-pid", "77", "--vcpus", "1", "--quota-pct", "25",
                                    "--cgroup", "v2"});
    EXPECT_EQ(t.throttle.targets.qemu_pid, 77);
    EXPECT_EQ(t.throttle.targets.vcpus, (std::vector<int>{1}));
    EXPECT_EQ(t.throttle.method, CgroupMethod::kV2);
    Command p = parse_command_line({"pin", "--qmp", "/run/q.sock", "--cpus", "0-1", "--all"});
    EXPECT_EQ(p.pin.targets.qmp_socket, "/run/q.sock");
    EXPECT_TRUE(p.pin.all);
    Command l = parse_command_line({"timeline", "--tid", "5", "--tid", "6", "--trace-clock", "mono"});
    EXPECT_EQ(l.timeline.targets.tids, (std::vector<int>{5, 6}));
    EXPECT_EQ(l.timeline.clock, "mono");
    Command s = parse_command_line({"freeze", "--tid", "5", "--schedule", "poisson", "--seed", "9",
                                    "--freeze-ms", "2.5", "--stagger", "--survive-parent"});
    EXPECT_EQ(s.freeze.schedule.kind, ScheduleKind::kPoisson);
    EXPECT_EQ(s.freeze.schedule.seed, 9u);
    EXPECT_EQ(s.freeze.schedule.freeze_ns, 2'500'000u);
    EXPECT_TRUE(s.freeze.stagger);
    EXPECT_TRUE(s.session.survive_parent);
}

TEST(Cli, ErrorsNameTheBadOptionAndValue) {
    EXPECT_EQ(error_of({}), "no command given");
    EXPECT_EQ(error_of({"freez"}), "unknown command 'freez'");
    EXPECT_EQ(error_of({"hog", "--bogus"}), "hog: unrecognised option '--bogus'");
    EXPECT_EQ(error_of({"hog", "--duty", "abc"}),
              "hog: the argument ('abc') for option '--duty' is invalid");
    EXPECT_EQ(error_of({"hog", "--duty", "0"}), "--duty 0.000000 must be in (0, 100] percent");
    EXPECT_EQ(error_of({"hog", "--nice", "20"}), "--nice 20 must be in [-20, 19]");
    EXPECT_EQ(error_of({"hog", "--cpus", "0-x"}), "--cpus '0-x': 'x' is not a non-negative integer");
    EXPECT_EQ(error_of({"freeze", "--tid", "1", "--freeze-ms", "100"}),
              "--freeze-ms must be shorter than --period-ms (the thread must run between freezes)");
    EXPECT_EQ(error_of({"freeze", "--tid", "1", "--schedule", "random"}),
              "--schedule 'random' must be fixed, uniform or poisson");
    EXPECT_EQ(error_of({"freeze", "--tid", "1", "--cgroup", "v3"}), "--cgroup 'v3' must be auto, v1 or v2");
    EXPECT_EQ(error_of({"freeze", "--tid", "1", "--freeze-ms", "-1"}), "--freeze-ms must not be negative");
    EXPECT_EQ(error_of({"freeze", "--tid", "1,1"}), "--tid '1,1': 1 is given twice");
    EXPECT_EQ(error_of({"freeze", "--tid", "0"}), "--tid 0: thread ids are positive");
    EXPECT_EQ(error_of({"freeze"}), "no threads given: use --tid, --qemu-pid or --qmp");
    EXPECT_EQ(error_of({"throttle", "--tid", "1", "--quota-pct", "100"}),
              "--quota-pct 100.000000 must be above 0 and below 100 (percent of one CPU)");
    EXPECT_EQ(error_of({"throttle", "--tid", "1", "--quota-pct", "0.5", "--period-us", "100000"}),
              "--quota-pct 0.500000 of --period-us 100000 is below the kernel's minimum quota of 1000 us");
    EXPECT_EQ(error_of({"timeline", "--tid", "1", "--trace-clock", "local"}),
              "--trace-clock 'local' must be x86-tsc or mono");
    EXPECT_EQ(error_of({"pin", "--tid", "1"}), "pin: the option '--cpus' is required but missing");
    EXPECT_EQ(error_of({"timeline", "--tid", "1", "--duration", "-2"}), "--duration must not be negative");
}

TEST(Cli, HelpOfEveryCommandEndsWithExamples) {
    for (const char* name : {"", "hog", "throttle", "freeze", "pin", "timeline", "cleanup", "libvirt-args"}) {
        std::string text = usage_text(name);
        size_t examples = text.rfind("\nEXAMPLES\n");
        ASSERT_NE(examples, std::string::npos) << name;
        EXPECT_EQ(text.find('\n', examples + 10) + 1 <= text.size(), true);
        EXPECT_NE(text.find("spinlab-load", examples), std::string::npos) << name;
    }
    Command c = parse_command_line({"freeze", "--help"});
    EXPECT_TRUE(c.help);
    EXPECT_NE(c.help_text.find("--freeze-ms"), std::string::npos);
}

// `preempt`, the old name of freeze (issue 53), still runs freeze with the same options; its help
// is freeze's, and the overview says what it is.
TEST(Cli, PreemptIsTheOldNameOfFreeze) {
    Command c = parse_command_line({"preempt", "--tid", "5", "--freeze-ms", "2.5", "--period-ms", "50",
                                    "--stagger", "--rt-priority", "10"});
    EXPECT_EQ(c.name, "freeze");
    EXPECT_EQ(c.freeze.targets.tids, (std::vector<int>{5}));
    EXPECT_EQ(c.freeze.schedule.freeze_ns, 2'500'000u);
    EXPECT_EQ(c.freeze.schedule.period_ns, 50'000'000u);
    EXPECT_TRUE(c.freeze.stagger);
    EXPECT_EQ(c.freeze.rt_priority, 10);
    EXPECT_EQ(command_named("preempt"), "freeze");
    EXPECT_EQ(command_named("freeze"), "freeze");
    EXPECT_EQ(command_named("freez"), "");
    EXPECT_EQ(error_of({"preempt", "--tid", "1", "--freeze-ms", "100"}),
              "--freeze-ms must be shorter than --period-ms (the thread must run between freezes)");
    Command h = parse_command_line({"preempt", "--help"});
    EXPECT_TRUE(h.help);
    EXPECT_EQ(h.help_text, usage_text("freeze"));
    EXPECT_EQ(h.help_text.rfind("Usage: spinlab-load freeze [options]\n", 0), 0u) << h.help_text;
    EXPECT_NE(h.help_text.find("(preempt: old name of freeze)\n"), std::string::npos) << h.help_text;
    EXPECT_EQ(h.help_text.find("spinlab-load preempt"), std::string::npos) << "examples say freeze";
    const std::string overview = usage_text("");
    EXPECT_NE(overview.find("  freeze        freeze threads"), std::string::npos) << overview;
    EXPECT_NE(overview.find("  preempt       old name of freeze\n"), std::string::npos) << overview;
}

TEST(Cli, ConfigFileUsesTheSameNames) {
    char path[] = "/tmp/spinlab-cli-test-XXXXXX";
    int fd = ::mkstemp(path);
    std::string ini = "tid = 42\nfreeze-ms = 5\nperiod-ms = 50\nschedule = uniform\n";
    ASSERT_EQ(::write(fd, ini.data(), ini.size()), static_cast<ssize_t>(ini.size()));
    ::close(fd);
    Command c = parse_command_line({"freeze", "--config", path, "--seed", "3"});
    EXPECT_EQ(c.freeze.targets.tids, (std::vector<int>{42}));
    EXPECT_EQ(c.freeze.schedule.freeze_ns, 5'000'000u);
    EXPECT_EQ(c.freeze.schedule.kind, ScheduleKind::kUniform);
    EXPECT_EQ(c.freeze.schedule.seed, 3u);
    std::string bad = std::string(path) + ".bad";
    FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs("freez-ms = 5\n", f);
    std::fclose(f);
    EXPECT_EQ(error_of({"freeze", "--tid", "1", "--config", bad}),
              "freeze: unrecognised option 'freez-ms'");
    ::unlink(path);
    ::unlink(bad.c_str());
}

TEST(Cli, FlagOptionsAreKnown) {
    EXPECT_TRUE(is_flag_option("freeze", "stagger"));
    EXPECT_FALSE(is_flag_option("freeze", "freeze-ms"));
    EXPECT_TRUE(is_flag_option("preempt", "stagger")) << "the old name's options are freeze's";
    EXPECT_TRUE(is_flag_option("pin", "all"));
    EXPECT_FALSE(is_flag_option("hog", "nonexistent"));
}

}  // namespace
}  // namespace spinlab::load
