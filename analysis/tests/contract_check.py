#!/usr/bin/python3
"""The C++ side of the contract, read back: run by experiments/runner/contract_test.cc.

    contract_check.py RESULTS_DIR QUERY_JSON RECORD_JSONL

The C++ test writes known counters with the real writers (the runner's results directory,
`spinlab-collect query --format json`, a record file line); this script reads them with
analysis's own loader and checks every field against known_perf() below, which must stay the
same recipe as contract_test.cc's. The names come from the ABI's tables (spinlab_report.names,
the build's abi_names.json), as the writers' do; results recorded by earlier runners
(labs/tests/data) must still use them: a name renamed in an ABI table fails here. Exits 1 with
one line per mismatch.
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from spinlab_report import contract as c  # noqa: E402
from spinlab_report import reader  # noqa: E402
from spinlab_report import names  # noqa: E402
from spinlab_report import report_doc  # noqa: E402
from spinlab_report import summary  # noqa: E402
from spinlab_report.buckets import NBUCKETS  # noqa: E402

# LhpClass values 0 .. 4 in the ABI's order (perfdata.h's table): contract_test.cc's l.
ABI_LHP = names.LHP_CLASS.names
# Real results of format 1 that earlier runners wrote, kept as the labs' test data.
RECORDED = os.path.join(HERE, "..", "..", "labs", "tests", "data")
CLASS_IDS = {"lockbench.0": 0, "sched": 1}
problems = []


def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: got {got!r}, expected {want!r}")


def known_perf(cpu, cid):
    """The counters contract_test.cc gives (cpu, class id): counts, dense histograms, lhp."""
    b = 1000 * (cpu + 1) + 100 * cid
    wait = [0] * NBUCKETS
    wait[0], wait[9], wait[23], wait[63] = 1, b + 2, 3 + cpu, 1
    hold = [0] * NBUCKETS
    hold[8], hold[1] = b + 6, 2
    counts = {"uncontended": b + 1, "wait_overflow": 4 + cid, "wait_cycles_sum": 7 * b + 5,
              "wait_cycles_max": (1 << 23) + cpu, "holds_timed": b + 13, "hold_overflow": 7 + cid,
              "hold_cycles_sum": 11 * b, "hold_cycles_max": 300 + cpu, "long_holds": 2 + cpu}
    counts["acquisitions"] = counts["uncontended"] + sum(wait) + counts["wait_overflow"]
    lhp = {name: {"count": 10 * l + cpu + 1, "cycles": 1000 * (l + 1) + cid} for l, name in enumerate(ABI_LHP)}
    return counts, wait, hold, lhp


def check_class(where, cpu, name, raw):
    """One class's counters as a writer wrote them, read by the loader, against known_perf."""
    known_keys = set(c.CLASS_COUNTS + c.CLASS_OPTIONAL_COUNTS + c.CLASS_HISTOGRAMS + ("lhp",))
    expect(f"{where}: fields the loader does not know", sorted(set(raw) - known_keys), [])
    expect(f"{where}: fields missing", sorted(known_keys - set(raw)), [])
    try:
        st = reader.class_stat(cpu, name, raw, where)
    except c.ContractError as e:
        problems.append(str(e))
        return
    counts, wait, hold, lhp = known_perf(cpu, CLASS_IDS[name])
    expect(f"{where}: counts", st.counts, counts)
    expect(f"{where}: wait_hist", st.wait.tolist(), wait)
    expect(f"{where}: hold_hist", st.hold.tolist(), hold)
    expect(f"{where}: lhp", st.lhp, lhp)
    expect(f"{where}: acquisitions/uncontended/overflow/max/long holds",
           (st.acquisitions, st.uncontended, st.overflow, st.wait_max, st.long_holds),
           (counts["acquisitions"], counts["uncontended"], counts["wait_overflow"], counts["wait_cycles_max"],
            counts["long_holds"]))


def check_results(path):
    run = reader.load_run(path)
    expect("problems", run.problems, [])
    expect("meta lock, clock", (run.meta["lock"], run.meta["clock"]),
           (names.LOCK_ALGORITHM.kQueued, names.CLOCK_SOURCE.kCpuidRdtsc))
    expect("status", run.status["state"], "complete")
    expect("snapshots", [(s.phase, s.rep) for s in run.snapshots], [("freeze-10ms", 2)])
    if not run.snapshots:  # the loader refused it (problems above says why)
        return
    s = run.snapshots[0]
    expect("snapshot times", (s.start_guest_tsc, s.end_guest_tsc, s.duration_s), (1000, 9000, 2.0))
    with open(os.path.join(path, c.SNAPSHOT_DIR, "freeze-10ms-r2.json"), encoding="utf-8") as f:
        raw = json.load(f)
    for cpu in raw["cpus"]:
        for name, d in cpu["classes"].items():
            check_class(f"snapshot cpu {cpu['cpu']} {name}", cpu["cpu"], name, d)
    expect("snapshot classes", sorted((st.cpu, st.lock_class) for st in s.stats),
           [(0, "lockbench.0"), (0, "sched"), (1, "lockbench.0"), (1, "sched")])
    lockbench = sum(known_perf(cpu, 0)[0]["acquisitions"] for cpu in (0, 1))
    expect("workload", s.workload, {"lockbench": {"ops": lockbench, "ops_per_s": lockbench / 2.0,
                                                  "classes": ["lockbench"]}})
    expect("long waits", s.long_waits,
           [{"cpu": l % 2, "lock_class": "sched" if l % 2 else "lockbench.0", "start_tsc": 5000 + l,
             "wait_cycles": (1 << 21) + l, "holder_cpu": None if l == 0 else 1 - l % 2,
             "holder_end_cpu": None if l == 4 else l % 2, "lhp_class": name,
             "holds": None if l == 0 else [[1 - l % 2, 4000 + l], [l % 2, 6000 + l if l % 2 else None]],
             "holder_steal_ns": None if l == 4 else 100 * l, "waiter_steal_ns": None if l == 4 else 10 * l}
            for l, name in enumerate(ABI_LHP)])
    tl = run.timeline
    expect("timeline rows", None if tl is None else
           [tuple(r) for r in tl[list(c.TIMELINE_COLUMNS)].itertuples(index=False)],
           [(0, 501, "on", 100, 200, "freeze-10ms", 2), (0, 501, "off", 200, 300, "freeze-10ms", 2),
            (0, 501, "frozen", 300, 400, "freeze-10ms", 2), (0, 501, "unknown", 400, 450, "freeze-10ms", 2),
            (1, 502, "on", 100, 400, "freeze-10ms", 2)])
    expect("long waits min, dropped", (s.long_wait_threshold, s.long_waits_dropped), (1 << 20, 3))
    session = known_session()
    expect("meta trace", run.meta["trace"], {**session, "stacks": known_stacks()})
    expect("snapshot trace fields the loader does not know", sorted(set(raw["trace"]) - set(s.trace)), [])
    expect("snapshot trace", s.trace, known_trace(session))
    expect("meta neighbours", run.meta["neighbours"], {
        "host_cpus": [0, 1], "overcommit": {"freeze-10ms": 1.5},
        "vms": [{"name": "run", "role": "measured", "vcpus": 2, "memory_mb": 256, "lock": "tas",
                 "workload": "/bin/lockbench", "pin": [0, 1]},
                {"name": "run-n1", "role": "neighbour", "vcpus": 1, "memory_mb": 128, "lock": "mcs",
                 "workload": "/bin/lockbench --locks 2", "pin": [0]}]})
    expect("neighbour counters", run.neighbours,
           [{"phase": "freeze-10ms", "rep": 2, "vm": 1, "ops_per_s": lockbench / 2.0}])
    expect("every VM's throughput", [r[:4] for r in report_doc.every_vm_rows(run)],
           [["freeze-10ms", "run (measured)", f"{lockbench / 2.0:,.1f}", "1"],
            ["freeze-10ms", "run-n1", f"{lockbench / 2.0:,.1f}", "1"]])
    lost = summary.trace_loss([s])
    expect("summary trace loss", (lost["repetitions"], lost["loss"], lost["damaged_frames"]),
           ([2], known_trace(session)["loss"], 2))


def known_session():
    """contract_test.cc:known_session(), as [trace] names it."""
    return {"enable_flags": "spinlock,long-wait", "buffer_size": 8192, "minimum_buffers": 3, "maximum_buffers": 50,
            "flush_timer_ms": 20, "logger_mode": "no-drop-stall", "profile_interval": 5}


def known_stacks():
    """contract_test.cc's m.trace_stacks: stacks on spinlock events, 16 frames, 512 buckets, the
    default cache size."""
    return {"stack_flags": "spinlock,long-wait", "stack_caching": "on", "max_stack_depth": 16, "bucket_count": 512,
            "cache_size": 3 * 1024 * 1024}


def known_trace(session):
    """contract_test.cc's TraceRecord: per CPU b = 100 (cpu + 1), attempted b + 10, written b + 7, lost 3,
    buffers written b + 1, log buffers lost b + 2, real-time buffers lost b + 4."""
    cpus = []
    for cpu in (0, 1):
        b = 100 * (cpu + 1)
        cpus.append({"cpu": cpu, "loss": dict(zip(c.TRACE_LOSS_COUNTS, (b + 10, b + 7, 3, b + 1, b + 2, b + 4)))})
    total = {k: sum(x["loss"][k] for x in cpus) for k in c.TRACE_LOSS_COUNTS}
    return {**session, "file": "snapshots/freeze-10ms-r2.trace", "session_id": 77, "buffers_per_cpu": 48,
            "events": 900, "buffers": 31, "damaged_frames": 2, "counters_found": True, "loss": total, "cpus": cpus}


def check_query(path):
    with open(path, encoding="utf-8") as f:
        q = json.load(f)
    expect("query cpus", q["cpus"], 2)
    for cls in q["classes"]:
        name = cls["name"]
        expect(f"query {name} id", cls["id"], CLASS_IDS[name])
        for entry in cls["per_cpu"]:
            check_class(f"query {name} cpu {entry['cpu']}", entry["cpu"], name, entry["perf"])
        merged = reader.class_stat(-1, name, cls["merged"], f"query {name} merged")
        expect(f"query {name} merged acquisitions", merged.acquisitions,
               sum(known_perf(cpu, CLASS_IDS[name])[0]["acquisitions"] for cpu in (0, 1)))
    expect("query classes", [cls["name"] for cls in q["classes"]], ["lockbench.0", "sched"])


def check_record(path):
    with open(path, encoding="utf-8") as f:
        line = json.loads(f.readline())
    names = {v: k for k, v in CLASS_IDS.items()}
    for cpu in line["cpus"]:
        for entry in cpu["classes"]:
            check_class(f"record cpu {cpu['cpu']} class {entry['id']}", cpu["cpu"], names[entry["id"]], entry["perf"])


def recorded_names(run_dir):
    """The ABI names a recorded results directory uses: {enum key: set of names}."""
    with open(os.path.join(run_dir, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    used = {"lock_algorithm": {meta["lock"]}, "clock_source": {meta["clock"]}, "lhp_class": set()}
    for path in glob.glob(os.path.join(run_dir, "snapshots", "*.json")):
        with open(path, encoding="utf-8") as f:
            snap = json.load(f)
        for cpu in snap["cpus"]:
            for perf in cpu["classes"].values():
                used["lhp_class"] |= set(perf.get("lhp", {}))
        used["lhp_class"] |= {w["lhp_class"] for w in snap.get("long_waits") or []}
    return used


def check_recorded(root):
    """Every name recorded results use is still the ABI's, and the runner's lock classes carry
    every LHP class (it writes all of them): a renamed ABI name would make them unreadable."""
    runs = sorted(os.path.dirname(m) for m in glob.glob(os.path.join(root, "*", "*", "meta.json")))
    expect(f"recorded results under {root}", bool(runs), True)
    lhp_seen = set()
    for run_dir in runs:
        where = os.path.relpath(run_dir, os.path.join(HERE, "..", ".."))
        used = recorded_names(run_dir)
        for key, names_used in used.items():
            gone = sorted(names_used - set(getattr(names, key.upper()).names))  # names.LHP_CLASS, ...
            expect(f"{where} (recorded, format {c.FORMAT}): {key} names the ABI's table in {names.PATH} "
                   f"no longer has (rename it back, or bump contract.FORMAT and re-record)", gone, [])
        lhp_seen |= used["lhp_class"]
    expect("LHP classes of the recorded results against the ABI's", sorted(lhp_seen), sorted(ABI_LHP))


# Keys a writer leaves out on purpose (analysis/README.md says when): in this known run the
# Linux guest's workload unit (the guest counts nothing here). Every other key of each object in
# the table (hostlib/results_contract.h, read as contract.OBJECTS) must be written.
NOT_WRITTEN_HERE = {("workload", c.K.unit)}


def check_object(where, obj_name, obj):
    """One written JSON object against its object in the results' table: the same keys, in the
    table's order, but for NOT_WRITTEN_HERE."""
    want = [k for k in c.OBJECTS[obj_name] if (obj_name, k) not in NOT_WRITTEN_HERE]
    expect(f"{where}: keys against the table's {obj_name}", list(obj), want)


def check_tables(run_dir):
    """Every object the runner wrote holds exactly its table's keys (so a key added to the table
    fails here until the writer writes it and the reader has its name)."""
    K = c.K
    with open(os.path.join(run_dir, c.META), encoding="utf-8") as f:
        meta = json.load(f)
    check_object("meta.json", "meta", meta)
    check_object("meta.json host", "meta_host", meta[K.host])
    check_object("meta.json freeze_rt_priority", "meta_freeze_rt_priority", meta[K.freeze_rt_priority])
    for f_ in meta[K.freezer]:
        check_object("meta.json freezer", "meta_freezer", f_)
    check_object("meta.json neighbours", "meta_neighbours", meta[K.neighbours])
    for vm in meta[K.neighbours][K.vms]:
        check_object("meta.json neighbour vm", "meta_neighbour_vm", vm)
    check_object("meta.json trace", "meta_trace", meta[K.trace])
    check_object("meta.json trace stacks", "meta_trace_stacks", meta[K.trace][K.stacks])
    with open(os.path.join(run_dir, c.STATUS), encoding="utf-8") as f:
        check_object("status.json", "status", json.load(f))
    with open(os.path.join(run_dir, c.TIMELINE), encoding="utf-8") as f:
        expect("timeline.csv columns", f.readline().strip().split(","), list(c.OBJECTS["timeline"]))
    for path in sorted(glob.glob(os.path.join(run_dir, c.SNAPSHOT_DIR, "*.json"))):
        where = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            snap = json.load(f)
        check_object(where, "snapshot", snap)
        for stamp in (K.start, K.end):
            check_object(f"{where} {stamp}", "stamp", snap[stamp])
        for name, w in snap[K.workload].items():
            check_object(f"{where} workload {name}", "workload", w)
        for cpu in snap[K.cpus]:
            check_object(f"{where} cpu", "snapshot_cpu", cpu)
            for cls, perf in cpu[K.classes].items():
                check_object(f"{where} cpu {cls}", "class_perf", perf)
                for lhp_class, entry in perf[K.lhp].items():
                    check_object(f"{where} cpu {cls} lhp {lhp_class}", "lhp_entry", entry)
        for wait in snap[K.long_waits]:
            if wait[K.lhp_class] == ABI_LHP[1]:  # the one known wait that has every optional key
                check_object(f"{where} long wait", "long_wait", wait)
        check_object(f"{where} trace", "snapshot_trace", snap[K.trace])
        check_object(f"{where} trace loss", "trace_loss", snap[K.trace][K.loss])
        for cpu in snap[K.trace][K.cpus]:
            check_object(f"{where} trace cpu", "trace_cpu", cpu)
            check_object(f"{where} trace cpu loss", "trace_loss", cpu[K.loss])


def main():
    results, query, record = sys.argv[1:4]
    for check, arg in ((check_recorded, RECORDED), (check_results, results), (check_tables, results),
                       (check_query, query), (check_record, record)):
        try:
            check(arg)
        except c.ContractError as e:  # the loader refused what a writer wrote: one mismatch
            problems.append(f"{check.__name__}: {e}")
    for p in problems:
        print(p)
    print(f"contract: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
