// timeline on threads that switch about a thousand times a second each while other threads
// share the CPUs: every switch-in and switch-out of each traced thread must be in the timeline,
// so it has no `unknown` row. On these machines the kernel's sched_switch lacks some switch-ins
// (those from tasks whose events it never emits: switch_records.h), so this fails when they are
// not taken from perf's switch records. A second timeline beside it with --no-switch-records
// shows how many the trace alone lacked (the MEASURED line).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/testing/integration_support.h"

namespace spinlab::load {
namespace {

using namespace testing;

struct Tally {
    size_t on = 0, unknown = 0;
    uint64_t unknown_ticks = 0, ticks = 0;
};

std::map<int, Tally> tally(const std::string& csv) {
    std::map<int, Tally> by_tid;
    for (const auto& r : parse_csv(slurp(csv))) {
        Tally& t = by_tid[std::stoi(r.at("tid"))];
        const uint64_t ticks = std::stoull(r.at("end_host_tsc")) - std::stoull(r.at("start_host_tsc"));
        t.ticks += ticks;
        if (r.at("state") == "on") ++t.on;
        if (r.at("state") == "unknown") {
            ++t.unknown;
            t.unknown_ticks += ticks;
        }
    }
    return by_tid;
}

std::string summary(const std::map<int, Tally>& by_tid) {
    size_t spans = 0;
    uint64_t unknown = 0, all = 0;
    for (const auto& [tid, t] : by_tid) {
        spans += t.unknown;
        unknown += t.unknown_ticks;
        all += t.ticks;
    }
    char text[128];
    std::snprintf(text, sizeof text, "%zu unknown span(s), %.4f%% of the threads' time", spans,
                  all ? 100.0 * static_cast<double>(unknown) / static_cast<double>(all) : 0.0);
    return text;
}

TEST(TimelineIntegration, EverySwitchOfBusyThreadsIsTraced) {
    if (std::string why = need_root(); !why.empty()) GTEST_SKIP() << why;
    FakeVcpus traced(4, /*idle=*/false, /*switchy=*/true);
    FakeVcpus others(2);  // spinning: the traced threads get the CPU from them, the idle task, anyone
    const std::string dir = temp_dir();
    auto timeline = [&](const std::string& name, std::vector<std::string> extra) {
        std::vector<std::string> argv{SPINLAB_LOAD_BIN, "timeline", "--qemu-pid", std::to_string(traced.pid()),
                                      "--duration", "5", "--out", dir + "/" + name + ".csv", "--state-dir",
                                      dir + "/" + name};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return std::make_unique<ChildProcess>(argv);
    };
    auto full = timeline("full", {});
    auto bare = timeline("bare", {"--no-switch-records"});
    const int full_status = full->wait(30), bare_status = bare->wait(30);
    ASSERT_TRUE(WIFEXITED(full_status) && WEXITSTATUS(full_status) == 0) << full->stderr_text();
    ASSERT_TRUE(WIFEXITED(bare_status)) << bare->stderr_text();

    const std::map<int, Tally> with_records = tally(dir + "/full.csv");
    const std::map<int, Tally> trace_only = tally(dir + "/bare.csv");
    std::printf("MEASURED trace alone: %s; with perf switch records: %s\n%s", summary(trace_only).c_str(),
                summary(with_records).c_str(), full->stderr_text().c_str());
    ASSERT_EQ(with_records.size(), traced.tids().size()) << "a row set per traced thread";
    for (int tid : traced.tids()) {
        const Tally& t = with_records.at(tid);
        // Hundreds of switches each in 5 s even on a loaded host: the test exercised switching.
        EXPECT_GE(t.on, 100u) << "tid " << tid;
        EXPECT_EQ(t.unknown, 0u) << "tid " << tid << ": switches missing from the timeline\n"
                                 << full->stderr_text();
    }
}

}  // namespace
}  // namespace spinlab::load
