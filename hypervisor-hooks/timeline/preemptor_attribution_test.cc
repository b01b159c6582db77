#include "preemptor_attribution.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hypervisor-hooks/cleanup/ledger.h"
#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

using spinlab::PreemptorClass;

SchedSwitch out(uint64_t ts, int prev, int next, const char* comm, int cpu = 0) {
    SchedSwitch e{ts, cpu, prev, "R+", next};
    e.next_comm = comm;
    return e;
}
SchedSwitch in(uint64_t ts, int prev, int next, int cpu = 0) { return {ts, cpu, prev, "S", next}; }

TEST(Preemptor, SwitchOutNamesWhoTookTheCpuAndEachIsClassed) {
    // vCPU 0 (tid 10) and vCPU 1 (tid 11) of this VM; neighbour vm2's vCPUs 20, 21; hog 30.
    std::vector<SchedSwitch> ev = {
        out(100, 10, 11, "CPU 1/TCG"), in(200, 11, 10),   // own vCPU 1
        out(300, 10, 21, "CPU 1/TCG"), in(400, 21, 10),   // vm2's vCPU 1
        out(500, 10, 30, "spinlab-hog"), in(600, 30, 10), // the hog
        out(700, 10, 0, "swapper/0"), in(800, 0, 10),     // the idle task: a host task
        out(900, 10, 77, "kworker/0:1"),                  // a host task, off to the end
    };
    auto r = build_run_intervals(ev, {{10, 0, {}}, {11, 1, false}}, 0, 1000);
    PreemptorContext ctx = preemptor_context({{10, 0}, {11, 1}}, {parse_neighbour("vm2:20,21")});
    ctx.hogs = {30};
    classify_preemptors(r, ctx);
    std::vector<std::tuple<uint64_t, PreemptorClass, std::string, int, int, std::string>> got;
    for (const RunInterval& i : r)
        if (i.tid == 10 && i.state == RunState::kOff)
            got.emplace_back(i.start, i.preemptor, i.preemptor_vm, i.preemptor_vcpu, i.preemptor_pid, i.preemptor_comm);
    using P = PreemptorClass;
    decltype(got) want = {{100, P::kPreemptorOwnVcpu, "", 1, 11, "CPU 1/TCG"},
                          {300, P::kPreemptorNeighbourVcpu, "vm2", 1, 21, "CPU 1/TCG"},
                          {500, P::kPreemptorHog, "", -1, 30, "spinlab-hog"},
                          {700, P::kPreemptorHostTask, "", -1, 0, "swapper/0"},
                          {900, P::kPreemptorHostTask, "", -1, 77, "kworker/0:1"}};
    EXPECT_EQ(got, want);
    // tid 11 was off from the window start: who had its CPU then is not in the trace.
    for (const RunInterval& i : r) {
        if (i.tid == 11 && i.state == RunState::kOff && i.start == 0) {
            EXPECT_EQ(i.preemptor, P::kPreemptorUnknown);
        }
    }
}

TEST(Preemptor, FrozenIsFreezeAndWhatTheTraceLacksIsUnknown) {
    // Out at 100 to the hog, frozen [150, 250); out again at 450 with its switch-in not traced
    // (the CPU ran task 99 from 400: unknown [400, 450)); a switch-out from perf's records at 600
    // (next pid not known).
    std::vector<SchedSwitch> ev = {out(100, 10, 30, "spinlab-hog"), in(300, 30, 10), out(350, 10, 0, "swapper/0"),
                                   in(400, 0, 99),  out(450, 10, 30, "spinlab-hog"), in(500, 30, 10),
                                   out(600, 10, -1, "")};
    auto r = mark_frozen(build_run_intervals(ev, {{10, 0, {}}}, 0, 1000), {{10, 150, 250}});
    PreemptorContext ctx = preemptor_context({{10, 0}}, {});
    ctx.hogs = {30};
    classify_preemptors(r, ctx);
    std::map<uint64_t, std::pair<RunState, PreemptorClass>> got;
    for (const RunInterval& i : r)
        if (i.state != RunState::kOn) got[i.start] = {i.state, i.preemptor};
    using P = PreemptorClass;
    std::map<uint64_t, std::pair<RunState, PreemptorClass>> want = {
        {100, {RunState::kOff, P::kPreemptorHog}},      {150, {RunState::kFrozen, P::kPreemptorFreeze}},
        {250, {RunState::kOff, P::kPreemptorHog}},      {350, {RunState::kOff, P::kPreemptorHostTask}},
        {400, {RunState::kUnknown, P::kPreemptorUnknown}}, {450, {RunState::kOff, P::kPreemptorHog}},
        {600, {RunState::kOff, P::kPreemptorUnknown}}};
    EXPECT_EQ(got, want);
}

// A switch-out that left the thread asleep (tracefs prev_state S or D, perf's "blocked") is no
// preemption, whatever ran next: issue 52 saw TCG vCPU threads block in QEMU 2,277 times under a
// hog and each named "hog". Runnable switch-outs keep their preemptor; a freeze stays a freeze.
TEST(Preemptor, ASwitchOutThatBlockedHasNoPreemptor) {
    auto sw = [](uint64_t ts, const char* state, int next, const char* comm) {
        SchedSwitch e{ts, 0, 10, state, next};
        e.next_comm = comm;
        return e;
    };
    std::vector<SchedSwitch> ev = {
        sw(100, "S", 30, "spinlab-hog"), in(200, 30, 10),   // slept; the hog ran next
        sw(300, "R+", 30, "spinlab-hog"), in(400, 30, 10),  // preempted by the hog
        sw(500, "D", 77, "kworker/0:1"), in(600, 77, 10),   // uninterruptible, outside a freeze
        sw(700, "blocked", -1, ""), in(800, 0, 10),         // perf's record of a block
        sw(850, "S", 30, "spinlab-hog"),                    // asleep into a freeze
    };
    auto r = mark_frozen(build_run_intervals(ev, {{10, 0, {}}}, 0, 1000), {{10, 900, 950}});
    PreemptorContext ctx = preemptor_context({{10, 0}}, {});
    ctx.hogs = {30};
    classify_preemptors(r, ctx);
    using P = PreemptorClass;
    std::map<uint64_t, std::tuple<RunState, P, int, std::string>> got;
    for (const RunInterval& i : r)
        if (i.state != RunState::kOn) got[i.start] = {i.state, i.preemptor, i.preemptor_pid, i.preemptor_comm};
    std::map<uint64_t, std::tuple<RunState, P, int, std::string>> want = {
        {100, {RunState::kOff, P::kPreemptorBlocked, 30, "spinlab-hog"}},  // ran next, took nothing
        {300, {RunState::kOff, P::kPreemptorHog, 30, "spinlab-hog"}},
        {500, {RunState::kOff, P::kPreemptorBlocked, 77, "kworker/0:1"}},
        {700, {RunState::kOff, P::kPreemptorBlocked, -1, ""}},
        {850, {RunState::kOff, P::kPreemptorBlocked, 30, "spinlab-hog"}},
        {900, {RunState::kFrozen, P::kPreemptorFreeze, 30, "spinlab-hog"}},  // as before: who ran next
        {950, {RunState::kOff, P::kPreemptorBlocked, 30, "spinlab-hog"}}};
    EXPECT_EQ(got, want);
    EXPECT_FALSE(left_blocked("start"));
    EXPECT_FALSE(left_blocked("no-switch"));
    EXPECT_FALSE(left_blocked("R"));
    EXPECT_TRUE(left_blocked("S"));
}

TEST(Preemptor, NeighbourOptionIsCheckedAndTidsAreNamedOnce) {
    Neighbour n = parse_neighbour("vm-2:7,8,9");
    EXPECT_EQ(n.name, "vm-2");
    EXPECT_EQ(n.vcpu_tids, (std::vector<int>{7, 8, 9}));
    for (const char* bad : {"vm2", ":7", "vm2:", "vm2:7,", "vm2:x", "vm2:0", "vm2:7,7", "a,b:7", "vm2:7,,8", "vm2:-3"})
        EXPECT_THROW(parse_neighbour(bad), LoadError) << bad;
    EXPECT_THROW(preemptor_context({{7, 0}}, {parse_neighbour("vm2:7")}), LoadError);
    EXPECT_THROW(preemptor_context({}, {parse_neighbour("a:7"), parse_neighbour("b:7")}), LoadError);
    EXPECT_THROW(preemptor_context({}, {parse_neighbour("a:7"), parse_neighbour("a:8")}), LoadError);
}

TEST(Preemptor, HogsAreTheProcessesOfTheLedgers) {
    const std::string dir = std::filesystem::temp_directory_path() / ("spinlab-preemptor-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    EXPECT_TRUE(ledger_processes(dir).empty());  // no directory: none
    std::filesystem::create_directories(dir);
    LedgerEntry hog{LedgerEntry::Kind::kProcess, "", "", 4321, 99};
    LedgerEntry cg{LedgerEntry::Kind::kCgroup, "/sys/fs/cgroup/x", "", 0, 0};
    // A torn last line (being written) is skipped; a file not named spinlab-*-ledger is not read.
    std::ofstream(dir + "/spinlab-1-ledger") << format_ledger_entry(cg) << "\n" << format_ledger_entry(hog) << "\nprocess\t12";
    std::ofstream(dir + "/other-ledger") << format_ledger_entry(LedgerEntry{LedgerEntry::Kind::kProcess, "", "", 55, 1}) << "\n";
    EXPECT_EQ(ledger_processes(dir), (std::set<int>{4321}));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spinlab::load
