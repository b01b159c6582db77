// experiments/runner/results_test.cc: the results directory against the analysis contract
// (analysis/README.md): the JSON texts' fields and a whole directory
// written by these functions that analysis/spinlab-report reads without complaint.
#include "hypervisor-hooks/timeline/run_intervals.h"
#include "record_file.h"
#include "results.h"
#include "results_testing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <spinlab/sysinfo.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

namespace spinlab::run {
namespace {

pt::ptree parse_json(const std::string& text) {
    std::istringstream in(text);
    pt::ptree t;
    pt::read_json(in, t);
    return t;
}

// Two CPUs, class 0 "lockbench.0" with `waits` contended waits in bucket `k`, class 1 idle.
SnapshotRecord record(const std::string& phase, uint32_t rep, int k, uint64_t waits) {
    SnapshotRecord r = framed_record(phase, rep);
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
        collect::CpuSnapshot c = collect::empty_cpu(cpu);
        LockClassPerf& p = c.classes[0];
        p.uncontended = 1000;
        p.wait_hist[k] = waits;
        p.wait_hist[9] += 50;
        p.wait_overflow = 0;  // an overflow is a problem the report names
        p.acquisitions = p.uncontended + waits + 50 + p.wait_overflow;
        p.lhp_count[uint32_t(LhpClass::kUnknown)] = waits + 50;
        p.hold_hist[8] = 10;
        r.counters.cpus.push_back(c);
    }
    r.workload = workload_ops(r.counters, r.names, "lockbench", {"lockbench"}, r.duration_s);
    LongWaits lw;
    lw.min_cycles = 1 << 20;
    LongWaitEntry a;  // the holder changed during it: CPU 1, then CPU 0 from an unplaced moment
    a.cpu = 0, a.lock_class = "lockbench.0", a.start_tsc = 5000, a.wait_cycles = uint64_t(1) << 23;
    a.holder_cpu = 1, a.holder_end_cpu = 0, a.lhp_class = uint32_t(LhpClass::kUnknown);
    a.holds = {{1, std::nullopt}, {0, 5200}};
    a.holder_steal_ns = 0, a.waiter_steal_ns = 12;
    lw.entries.push_back(a);
    LongWaitEntry b;  // nothing known of its holders and no steal times
    b.cpu = 1, b.lock_class = "lockbench.0", b.start_tsc = 6000, b.wait_cycles = uint64_t(1) << 22;
    b.lhp_class = uint32_t(LhpClass::kHolderPreempted);
    lw.entries.push_back(b);
    r.long_waits = lw;
    return r;
}

TEST(Results, SnapshotFollowsTheContract) {
    pt::ptree t = parse_json(snapshot_json(record("host-load", 2, 23, 7)));
    EXPECT_EQ(t.get<int>("format"), 1);
    EXPECT_EQ(t.get<std::string>("phase"), "host-load");
    EXPECT_EQ(t.get<int>("rep"), 2);
    EXPECT_EQ(t.get<uint64_t>("start.guest_tsc"), 1000u);
    EXPECT_EQ(t.get<std::string>("end.wall"), "2025-01-01T12:00:02Z");
    EXPECT_EQ(t.get<uint64_t>("workload.lockbench.ops"), 2u * (1000 + 7 + 50));
    EXPECT_DOUBLE_EQ(t.get<double>("workload.lockbench.ops_per_s"), (1000 + 7 + 50));
    int cpus = 0;
    for (const auto& [k, cpu] : t.get_child("cpus")) {
        EXPECT_EQ(cpu.get<int>("cpu"), cpus++);
        const pt::ptree& cls = cpu.get_child("classes");
        EXPECT_EQ(cls.count("sched"), 0u);  // no acquisitions: left out
        // ptree treats dots as paths: look the class up by key.
        auto it = cls.find("lockbench.0");
        ASSERT_NE(it, cls.not_found());
        const pt::ptree& c = it->second;
        // The collector's form: sparse histograms, {"k": count} for non-empty buckets.
        uint64_t sum = 0;
        std::map<std::string, uint64_t> wait;
        for (const auto& [kk, b] : c.get_child("wait_hist")) {
            sum += b.get_value<uint64_t>();
            wait[kk] = b.get_value<uint64_t>();
        }
        EXPECT_EQ(wait, (std::map<std::string, uint64_t>{{"23", 7}, {"9", 50}}));
        EXPECT_EQ(c.get<uint64_t>("hold_hist.8"), 10u);
        EXPECT_EQ(c.get<uint64_t>("uncontended") + sum + c.get<uint64_t>("wait_overflow"),
                  c.get<uint64_t>("acquisitions"));
        EXPECT_EQ(c.get<uint64_t>("lhp.unknown.count"), 57u);
        EXPECT_EQ(c.get<uint64_t>("lhp.holder-preempted.count"), 0u);
    }
    EXPECT_EQ(cpus, 2);
    EXPECT_EQ(t.get_child("long_waits").size(), 2u);
    auto lw = t.get_child("long_waits").begin();
    EXPECT_EQ(lw->second.get<std::string>("lock_class"), "lockbench.0");
    EXPECT_EQ(lw->second.count("class"), 0u);  // its name before issue 53
    EXPECT_EQ(lw->second.get<int>("holder_cpu"), 1);
    EXPECT_EQ(lw->second.get<int>("holder_end_cpu"), 0);
    EXPECT_EQ(lw->second.get<std::string>("lhp_class"), "unknown");
    // "holds": [[1, null], [0, 5200]]
    std::vector<std::vector<std::string>> holds;
    for (const auto& [k, h] : lw->second.get_child("holds")) {
        holds.emplace_back();
        for (const auto& [kk, x] : h) holds.back().push_back(x.data());
    }
    EXPECT_EQ(holds, (std::vector<std::vector<std::string>>{{"1", "null"}, {"0", "5200"}}));
    EXPECT_EQ(lw->second.get<uint64_t>("holder_steal_ns"), 0u);
    EXPECT_EQ(lw->second.get<uint64_t>("waiter_steal_ns"), 12u);
    ++lw;
    EXPECT_EQ(lw->second.get<std::string>("holder_cpu"), "null");
    EXPECT_EQ(lw->second.get<std::string>("holder_end_cpu"), "null");
    EXPECT_EQ(lw->second.get<std::string>("lhp_class"), "holder-preempted");
    // not placed, not known: the keys are left out
    EXPECT_EQ(lw->second.count("holds") + lw->second.count("holder_steal_ns") + lw->second.count("waiter_steal_ns"), 0u);
    EXPECT_EQ(t.get<uint64_t>("long_wait_threshold"), 1u << 20);
}

// The workload part counts the throughput classes whatever the program: kmix alone, counted by
// its kernel classes, is "kmix" with those classes' acquisitions (issue 39: it was missing, and
// the report said "lockbench ops/s", n = 0).
TEST(Results, WorkloadCountsTheThroughputClassesWhateverTheProgram) {
    SnapshotRecord r = record("idle-host", 1, 23, 7);  // class 0 "lockbench.0": 1057 per CPU
    r.workload = workload_ops(r.counters, r.names, "kmix", {"lockbench", "pmm"}, r.duration_s);
    pt::ptree t = parse_json(snapshot_json(r));
    EXPECT_EQ(t.count("workload"), 1u);
    EXPECT_EQ(t.get_child("workload").count("lockbench"), 0u);
    EXPECT_EQ(t.get<uint64_t>("workload.kmix.ops"), 2u * (1000 + 7 + 50));
    EXPECT_DOUBLE_EQ(t.get<double>("workload.kmix.ops_per_s"), 2.0 * (1000 + 7 + 50) / r.duration_s);
    std::vector<std::string> classes;
    for (const auto& [k, v] : t.get_child("workload.kmix.classes")) classes.push_back(v.get_value<std::string>());
    EXPECT_EQ(classes, (std::vector<std::string>{"lockbench", "pmm"}));
    // A prefix no class has: counted as 0 ops, still reported (the classes said what to count).
    r.workload = workload_ops(r.counters, r.names, "kmix", {"heap"}, r.duration_s);
    EXPECT_EQ(parse_json(snapshot_json(r)).get<uint64_t>("workload.kmix.ops"), 0u);
}

// A guest that counts its workload itself (a Linux guest's agent): the difference over the
// window, under the workload's name, with its unit and no classes.
TEST(Results, AWorkloadTheGuestCountsIsItsOwnDifference) {
    SnapshotRecord r = record("idle-host", 1, 23, 7);
    WorkloadInformation a{}, b{};
    std::strcpy(b.name, "hackbench");
    std::strcpy(b.unit, "hackbench runs");
    a.ops = 40;
    b.ops = 52;
    r.workload = counted_workload_ops(a, b, 4.0);
    pt::ptree t = parse_json(snapshot_json(r));
    EXPECT_EQ(t.get<uint64_t>("workload.hackbench.ops"), 12u);
    EXPECT_DOUBLE_EQ(t.get<double>("workload.hackbench.ops_per_s"), 3.0);
    EXPECT_EQ(t.get<std::string>("workload.hackbench.unit"), "hackbench runs");
    EXPECT_EQ(t.get_child("workload.hackbench.classes").size(), 0u);
    b.ops = 10;  // a count that went back (the agent restarted): nothing, not a wrapped number
    EXPECT_EQ(counted_workload_ops(a, b, 4.0).at("hackbench").ops, 0u);
    // the class-counted workload has no unit key
    r.workload = workload_ops(r.counters, r.names, "kmix", {"heap"}, r.duration_s);
    EXPECT_EQ(parse_json(snapshot_json(r)).get_child("workload.kmix").count("unit"), 0u);
}

TEST(Results, NoLongWaitListOmitsTheKey) {
    SnapshotRecord r = record("idle-host", 1, 9, 3);
    r.long_waits.reset();
    pt::ptree t = parse_json(snapshot_json(r));
    EXPECT_EQ(t.count("long_waits"), 0u);
    EXPECT_EQ(t.count("long_wait_threshold"), 0u);
}

TEST(Results, StatusAndClock) {
    pt::ptree s = parse_json(status_json(false, "interrupted by SIGINT", {{"idle-host", 1}, {"host-load", 1}}));
    EXPECT_EQ(s.get<std::string>("state"), "partial");
    EXPECT_EQ(s.get<std::string>("reason"), "interrupted by SIGINT");
    EXPECT_EQ(s.get_child("done").size(), 2u);
    EXPECT_EQ(parse_json(status_json(true, "all done", {})).get<std::string>("state"), "complete");

    collect::ClockFit fit;
    fit.ok = true;
    fit.guest_ref = 1000;
    fit.host_ref = 6000;
    fit.intercept = 10;
    fit.drift_ppm = 2.5;
    fit.used = 8;
    pt::ptree c = parse_json(clock_json(fit, ClockSampling{3}));
    EXPECT_EQ(c.get<int64_t>("offset_cycles"), 5010);
    EXPECT_EQ(c.get<int>("samples_missed"), 3);
    EXPECT_DOUBLE_EQ(c.get<double>("drift_ppm"), 2.5);
    EXPECT_EQ(c.get<uint64_t>("ref_guest_tsc"), 1000u);
    EXPECT_EQ(c.get<int>("samples"), 8);
    EXPECT_EQ(c.get<std::string>("reference.source"), "none");  // no sampler, no reference
    EXPECT_EQ(c.get<std::string>("reference.calibration_bound_ns"), "null");
}

TEST(Results, ClockJsonSaysWhatTheReferencePlacedAndWhatTheSamplerSpun) {
    collect::ClockFit fit;
    fit.ok = true;
    ClockSampling s{2, 41.5, {}};
    s.reference.source = "hpet";
    s.reference.readings = 700;
    s.reference.placed = 698;
    s.reference.calibration.ok = true;
    s.reference.calibration.lo_ns = 100;
    s.reference.calibration.hi_ns = 160;
    s.reference.calibration.used = 140;
    pt::ptree c = parse_json(clock_json(fit, s));
    EXPECT_DOUBLE_EQ(c.get<double>("sampler_spun_ms"), 41.5);
    EXPECT_EQ(c.get<std::string>("reference.source"), "hpet");
    EXPECT_EQ(c.get<int>("reference.readings"), 700);
    EXPECT_EQ(c.get<int>("reference.placed"), 698);
    EXPECT_EQ(c.get<int>("reference.calibrated_from"), 140);
    EXPECT_DOUBLE_EQ(c.get<double>("reference.calibration_bound_ns"), 30);
    EXPECT_EQ(c.get<std::string>("reference.why_not"), "");
}

// One shape of a clock fit: the record file's end line carries, under "clock_fit", the members
// clock.json has (clock_fit_json.h), so a reader of one reads the other; clock.json adds only
// its format and what the run-long sampler did (samples_missed, sampler_spun_ms, reference),
// the end line only "ok".
TEST(Results, ClockJsonAndTheRecordEndLineShareTheFitShape) {
    collect::ClockFit fit;
    fit.ok = true;
    fit.guest_ref = 1000;
    fit.host_ref = 6000;
    fit.drift_measured = true;
    fit.drift_bound_ppm = 1.5;
    fit.points = {{1000, 5000, 40.5}, {9000, 5003, 38}};
    pt::ptree clock = parse_json(clock_json(fit, ClockSampling{3}));
    clock.erase("format");
    clock.erase("samples_missed");
    clock.erase("sampler_spun_ms");
    clock.erase("reference");
    pt::ptree end = parse_json(collect::record_end_json("done", 2, fit)).get_child("clock_fit");
    EXPECT_EQ(end.get<bool>("ok"), true);
    end.erase("ok");
    std::ostringstream a, b;
    pt::write_json(a, clock);
    pt::write_json(b, end);
    EXPECT_EQ(a.str(), b.str());
    EXPECT_EQ(end.get_child("points").size(), 2u);
}

TEST(Results, HaltsCsvHasEveryCpusSpansLossesAndRefusalInOrder) {
    // CPU 1 (given first): two spans, the second's lost range open to the end, still halted;
    // CPU 0: a first read that lost spans, a span, then a refusal; CPU 2 records nothing.
    collect::CpuHalts c1{1, true, {{100, 150}, {400, 420}}, {{150, 380, 7}, {420, std::nullopt, 2}}, 900, std::nullopt, ""};
    collect::CpuHalts c0{0, true, {{50, 60}}, {{0, 50, 600}}, std::nullopt, 60, "CPU 0's halt span 9: exit 1 before enter 2"};
    collect::CpuHalts c2{2, false, {}, {}, std::nullopt, std::nullopt, ""};
    EXPECT_EQ(halts_csv({c1, c0, c2}),
              "cpu,enter_tsc,exit_tsc,kind\n"
              "0,0,50,lost\n"
              "0,50,60,halted\n"
              "0,60,,refused\n"
              "1,100,150,halted\n"
              "1,150,380,lost\n"
              "1,400,420,halted\n"
              "1,420,,lost\n"
              "1,900,,halted\n");
    EXPECT_TRUE(records_halts({c2, c0}));
    EXPECT_FALSE(records_halts({c2}));  // a guest that records no halts: no halts.csv
    EXPECT_FALSE(records_halts({}));
}

TEST(Results, RunDirAndLatest) {
    std::string out = testing::TempDir() + "results_test_" + std::to_string(getpid());
    fs::remove_all(out);
    std::string id = "r1";
    std::string a = make_run_dir(out, id);
    EXPECT_EQ(id, "r1");
    EXPECT_TRUE(fs::is_directory(a + "/snapshots"));
    std::string id2 = "r1";
    std::string b = make_run_dir(out, id2);
    EXPECT_EQ(id2, "r1-2");  // never overwrites an earlier run
    EXPECT_EQ(fs::read_symlink(out + "/latest").string(), "r1-2");
    fs::remove_all(out);
}

// The whole directory, as a short run writes it, read by the real analysis.
TEST(Results, SpinlabReportAcceptsIt) {
    std::string report = std::string(SPINLAB_SOURCE_DIR) + "/analysis/spinlab-report";
    if (access(report.c_str(), X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0)
        GTEST_SKIP() << "analysis/spinlab-report or /usr/bin/python3 missing";
    std::string out = testing::TempDir() + "results_report_" + std::to_string(getpid());
    fs::remove_all(out);
    std::string id = "run";
    std::string dir = make_run_dir(out, id);
    Meta m = framed_meta(id);
    m.lock = "tas";
    m.clock = spinlab::clock_source_name(spinlab::ClockSource::kLfenceRdtsc);
    m.host.tsc_hz = 2'600'000'000;
    m.guest_tsc_hz = 2'600'000'000;
    m.phases = {"idle-host", "host-load"};
    m.repetitions = 2;
    write_file(dir + "/meta.json", meta_json(m));
    std::vector<Done> done;
    for (uint32_t rep = 1; rep <= 2; ++rep) {
        write_file(dir + "/snapshots/idle-host-r" + std::to_string(rep) + ".json",
                   snapshot_json(record("idle-host", rep, 10, 100)));
        write_file(dir + "/snapshots/host-load-r" + std::to_string(rep) + ".json",
                   snapshot_json(record("host-load", rep, 23, 40 + rep)));
        done.push_back({"idle-host", rep});
        done.push_back({"host-load", rep});
    }
    using load::RunState;
    write_file(dir + "/timeline.csv",
               load::run_intervals_csv_header() +
                   load::format_run_intervals_csv({{501, 0, RunState::kOn, 0, 4000, "", 0},
                                                   {501, 0, RunState::kOff, 4000, 9000, "R+", -1},
                                                   {502, 1, RunState::kOn, 0, 9000, "", 1}},
                                                  {"host-load", 1}, {}));
    collect::ClockFit fit;
    fit.ok = true;
    fit.used = 4;
    write_file(dir + "/clock.json", clock_json(fit, ClockSampling{}));
    write_file(dir + "/status.json", status_json(true, "all 4 repetitions done", done));
    std::string cmd = report + " " + dir + " > " + out + "/report.out 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream log(out + "/report.out");
    std::stringstream ss;
    ss << log.rdbuf();
    ASSERT_EQ(rc, 0) << ss.str();
    ASSERT_TRUE(fs::exists(dir + "/summary.json")) << ss.str();
    pt::ptree s;
    pt::read_json(dir + "/summary.json", s);
    EXPECT_EQ(s.get<std::string>("state"), "complete");
    EXPECT_EQ(s.get<std::string>("phases.host-load.status"), "ok");
    EXPECT_EQ(s.get_child("phases.host-load.repetitions").size(), 2u);
    // Problems would mean the contract was broken somewhere.
    EXPECT_EQ(s.get_child("problems").size(), 0u) << ss.str();
    fs::remove_all(out);
}

}  // namespace
}  // namespace spinlab::run
