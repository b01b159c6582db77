// experiments/runner/contract_test.cc: the contract across the language boundary. The C++
// writers (the runner's results files, the collector's `query --format json` and record file)
// write known counters; analysis/tests/contract_check.py reads them with analysis's loader and
// checks every field against the same known counters, derived there independently. The
// results' timeline.csv comes from its one writer, hypervisor-hooks (spinlab-load timeline). A field
// renamed on one side fails here, rather than leaving a figure empty.
#include <gtest/gtest.h>
#include <spinlab/sysinfo.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "hypervisor-hooks/timeline/run_intervals.h"  // the one writer of timeline.csv
#include "locktrace/drain.h"
#include "record_file.h"
#include "report_format.h"
#include "results.h"
#include "results_testing.h"
#include "spec.h"
#include "text.h"
#include "trace_results.h"

namespace fs = std::filesystem;

namespace spinlab::run {
namespace {

// Every field of (cpu, class id) a number of its own; contract_check.py:known_perf() is the
// same recipe. Sums and maxima need not be consistent with the histograms: they are checked
// field by field, not recomputed.
LockClassPerf known_perf(uint32_t cpu, uint32_t id) {
    const uint64_t b = 1000 * (cpu + 1) + 100 * id;
    LockClassPerf p{};
    p.uncontended = b + 1;
    p.wait_hist[0] = 1;
    p.wait_hist[9] = b + 2;
    p.wait_hist[23] = 3 + cpu;
    p.wait_hist[63] = 1;
    p.wait_overflow = 4 + id;
    p.acquisitions = p.uncontended + 1 + (b + 2) + (3 + cpu) + 1 + p.wait_overflow;
    p.wait_cycles_sum = 7 * b + 5;
    p.wait_cycles_max = (uint64_t(1) << 23) + cpu;
    p.holds_timed = b + 13;
    p.hold_overflow = 7 + id;
    p.hold_hist[8] = b + 6;
    p.hold_hist[1] = 2;
    p.hold_cycles_sum = 11 * b;
    p.hold_cycles_max = 300 + cpu;
    p.long_holds = 2 + cpu;
    for (uint32_t l = 0; l < kLhpClassCount; ++l) {
        p.lhp_count[l] = 10 * l + cpu + 1;
        p.lhp_cycles[l] = 1000 * (l + 1) + id;
    }
    return p;
}

// The session's parameters as [trace] would ask for them.
TraceSessionInformation known_session() {
    TraceSessionInformation p{};
    p.enable_flags = kTraceGroupLongWait | kTraceGroupSpinlock;
    p.buffer_size = 8192;
    p.minimum_buffers = 3;
    p.maximum_buffers = 50;
    p.flush_timer_ms = 20;
    p.logger_mode = uint32_t(TraceLoggerMode::kNoDropStall);
    p.profile_interval = 5;
    return p;
}

// Two CPUs, classes 0 "lockbench.0" and 1 "sched"; one long wait of each LHP class.
SnapshotRecord known_record() {
    SnapshotRecord r = framed_record("freeze-10ms", 2);
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
        collect::CpuSnapshot c = collect::empty_cpu(cpu);
        c.classes[0] = known_perf(cpu, 0);
        c.classes[1] = known_perf(cpu, 1);
        r.counters.cpus.push_back(c);
    }
    r.workload = workload_ops(r.counters, r.names, "lockbench", {"lockbench"}, r.duration_s);
    LongWaits lw;
    lw.min_cycles = 1 << 20;
    lw.dropped = 3;
    for (uint32_t l = 0; l < kLhpClassCount; ++l) {
        LongWaitEntry e;
        e.cpu = l % 2, e.lock_class = l % 2 ? "sched" : "lockbench.0", e.start_tsc = 5000 + l;
        e.wait_cycles = (uint64_t(1) << 21) + l;
        e.holder_cpu = l == 0 ? std::nullopt : std::optional<uint32_t>(1 - l % 2);
        e.holder_end_cpu = l == 4 ? std::nullopt : std::optional<uint32_t>(l % 2);
        e.lhp_class = l;
        // holds: none for l = 0; a placed hand-over (l = 1, 3); an unplaced one (l = 2, 4)
        if (l > 0)
            e.holds = {{1 - l % 2, 4000 + l}, {l % 2, l % 2 ? std::optional<uint64_t>(6000 + l) : std::nullopt}};
        if (l != 4) e.holder_steal_ns = 100 * l, e.waiter_steal_ns = 10 * l;
        lw.entries.push_back(e);
    }
    r.long_waits = lw;
    // The trace session: contract_check.py:known_trace() is the same recipe.
    TraceRecord t;
    t.file = "snapshots/freeze-10ms-r2.trace";
    t.session = known_session();
    t.session.session_id = 77;
    t.session.buffers_per_cpu = 48;
    t.events = 900;
    t.buffers = 31;
    t.damaged_frames = 2;
    t.counters_found = true;
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
        const uint64_t b = 100 * (cpu + 1);
        TraceCpuCounters k{cpu, 0, {b + 10, b + 7, 3, b + 1, b + 2, b + 4}};
        t.cpus.push_back(k);
        locktrace::add_loss(t.totals, k.counters);
    }
    r.trace = t;
    return r;
}

// The guest's halts with a row of every kind (halts_check below expects them): CPU 0 halted
// twice, lost spans and is still halted; CPU 1 lost spans up to the end and was refused; CPU 2
// records nothing.
std::vector<collect::CpuHalts> known_halts() {
    collect::CpuHalts c0{0, true, {{1000, 1100}, {3000, 3050}}, {{1100, 2900, 12}}, 4000, std::nullopt, ""};
    collect::CpuHalts c1{1, true, {{500, 700}}, {{700, std::nullopt, 3}}, std::nullopt, 700, "CPU 1's halt span 9: exit 1 before enter 2"};
    collect::CpuHalts c2{2, false, {}, {}, std::nullopt, std::nullopt, ""};
    return {c1, c0, c2};  // the writer sorts by CPU
}

// halts.csv read back with the analysis's names (results_contract.json through contract.py, as
// contract_check.py reads timeline.csv's): its header is the table's halts object, its kinds the
// table's halt_kind names, each of them written.
const char* const kHaltsCheck = R"(
import json, sys
sys.path.insert(0, sys.argv[1])
from spinlab_report import contract as c
with open(sys.argv[2], encoding="utf-8") as f:
    lines = f.read().splitlines()
problems = []
if lines[0].split(",") != list(c.OBJECTS["halts"]):
    problems.append(f"halts.csv columns: got {lines[0]!r}, expected {','.join(c.OBJECTS['halts'])!r}")
with open(c.CONTRACT_PATH, encoding="utf-8") as f:
    table = [e["name"] for e in json.load(f)["enums"]["halt_kind"]]
kinds = {row.split(",")[list(c.OBJECTS["halts"]).index(c.K.kind)] for row in lines[1:]}
if kinds != set(table):
    problems.append(f"halts.csv kinds: got {sorted(kinds)}, the table's halt_kind: {table}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
)";

TEST(Contract, HaltsCsvIsWrittenWithTheTablesColumnsAndKinds) {
    const std::string out = testing::TempDir() + "contract_halts_" + std::to_string(getpid());
    fs::remove_all(out);
    fs::create_directories(out);
    write_file(out + "/halts.csv", halts_csv(known_halts()));
    write_file(out + "/halts_check.py", kHaltsCheck);
    const std::string cmd = "/usr/bin/python3 " + out + "/halts_check.py " + std::string(SPINLAB_SOURCE_DIR) +
                            "/analysis " + out + "/halts.csv > " + out + "/check.out 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << read_text(out + "/check.out");
    if (rc == 0) fs::remove_all(out);
}

TEST(Contract, AnalysisReadsEveryFieldTheWritersWrite) {
    const std::string out = testing::TempDir() + "contract_" + std::to_string(getpid());
    fs::remove_all(out);
    std::string id = "run";
    const std::string dir = make_run_dir(out, id);
    const SnapshotRecord rec = known_record();

    Meta m = framed_meta(id);
    m.lock = spinlab::lock_algorithm_name(spinlab::LockAlgorithm::kQueued);
    m.clock = spinlab::clock_source_name(spinlab::ClockSource::kCpuidRdtsc);
    m.phases = {rec.phase};
    m.trace = known_session();
    m.trace_stacks = TraceSpec::default_stacks();  // contract_check.py:known_stacks()
    m.trace_stacks.stack_flags = kTraceGroupSpinlock | kTraceGroupLongWait;
    m.trace_stacks.max_depth = 16;
    m.trace_stacks.bucket_count = 512;
    m.repetitions = 2;
    // A neighbours-N run's fields (contract_check.py: known_neighbours()), and neighbour 1's
    // counters beside the snapshot.
    m.neighbours = Meta::Neighbours{{0, 1},
                                    {{"run", "measured", 2, 256, "tas", "/bin/lockbench", {0, 1}},
                                     {"run-n1", "neighbour", 1, 128, "mcs", "/bin/lockbench --locks 2", {0}}},
                                    {{rec.phase, 1.5}}};
    write_file(dir + "/meta.json", meta_json(m));
    write_file(dir + "/snapshots/" + rec.phase + "-r2.json", snapshot_json(rec));
    fs::create_directories(dir + "/snapshots/neighbours");
    write_file(dir + "/snapshots/neighbours/" + rec.phase + "-r2-n1.json", snapshot_json(rec));
    write_file(dir + "/status.json", status_json(true, "done", {{rec.phase, 2}}));
    // Every state of the timeline; contract_check.py expects these rows.
    using load::RunState;
    const std::vector<load::RunInterval> timeline{{501, 0, RunState::kOn, 100, 200, "", 0},
                                                  {501, 0, RunState::kOff, 200, 300, "R+", -1},
                                                  {501, 0, RunState::kFrozen, 300, 400, "S", -1},
                                                  {501, 0, RunState::kUnknown, 400, 450,
                                                   "switch-in not traced", -1},
                                                  {502, 1, RunState::kOn, 100, 400, "", 1}};
    write_file(dir + "/timeline.csv",
               load::run_intervals_csv_header() +
                   load::format_run_intervals_csv(timeline, {rec.phase, 2}, [](uint64_t t) { return 2 * t; }));

    write_file(dir + "/halts.csv", halts_csv(known_halts()));

    // The collector's two writers of the same counters.
    collect::QueryView v{&rec.counters, &rec.names, {0, 1}, true, ""};
    write_file(out + "/query.json", collect::format_query(v, collect::OutputFormat::kJson));
    write_file(out + "/record.jsonl", collect::record_snapshot_json(1, rec.counters, std::nullopt) + "\n");

    const std::string check = std::string(SPINLAB_SOURCE_DIR) + "/analysis/tests/contract_check.py";
    const std::string cmd = "/usr/bin/python3 " + check + " " + dir + " " + out + "/query.json " + out +
                            "/record.jsonl > " + out + "/check.out 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << read_text(out + "/check.out");
    if (rc == 0) fs::remove_all(out);
}

}  // namespace
}  // namespace spinlab::run
