"""The counters' invariant with records in flight (aggregate.invariant_state): the report's
problems flag a class only when acquisitions run ahead of uncontended + waits + overflow by more
than the records that can be half done (lockbench's threads per CPU for its classes, one for a
kernel class), or fall behind it by more than a reset inside records explains (as many); lab 1's
checker calls the same function."""
import json
import os

import pytest

from spinlab_report import aggregate, reader


def _set_ahead(run_dir, cls: str, ahead: int, workload: str | None = None):
    """host-load r1, the first CPU with class cls: acquisitions = uncontended + waits + overflow + ahead."""
    path = os.path.join(run_dir, "snapshots", "host-load-r1.json")
    d = json.load(open(path))
    c = next(cpu["classes"][cls] for cpu in d["cpus"] if cls in cpu["classes"])
    c["acquisitions"] = c["uncontended"] + sum(c["wait_hist"].values()) + c["wait_overflow"] + ahead
    json.dump(d, open(path, "w"))
    if workload is not None:
        meta = os.path.join(run_dir, "meta.json")
        m = json.load(open(meta))
        m["workload"] = workload
        json.dump(m, open(meta, "w"))


def _broken(run_dir) -> list:
    return [p for p in aggregate.counters(reader.load_run(str(run_dir))).problems if "invariant broken" in p]


@pytest.mark.parametrize("cls,ahead,workload,broken", [
    ("lockbench.0", 0, None, False),
    ("lockbench.0", 1, None, False),      # one lockbench thread per CPU mid-record
    ("lockbench.0", 2, None, True),
    ("lockbench.0", -1, None, False),     # the runner's reset landed inside a ring-3 record
    ("lockbench.0", -2, None, True),
    ("lockbench.0", 3, "lockbench --threads-per-cpu 3", False),
    ("lockbench.0", -3, "lockbench --threads-per-cpu 3", False),
    ("lockbench.0", 4, "lockbench --threads-per-cpu=3", True),
    ("lockbench.0", -4, "lockbench --threads-per-cpu=3", True),
    ("sched", 1, "lockbench --threads-per-cpu 3", False),  # a kernel class: one record
    ("sched", 2, "lockbench --threads-per-cpu 3", True),
    ("sched", -1, "lockbench --threads-per-cpu 3", False),  # spin_lock records with interrupts on: reset mid-way
])
def test_records_in_flight_are_no_problem(run_copy, cls, ahead, workload, broken):
    _set_ahead(run_copy, cls, ahead, workload)
    problems = _broken(run_copy)
    if broken:
        (p,) = problems
        assert p.startswith("snapshots/host-load-r1.json: CPU ") and f" class {cls}: invariant broken: uncontended " in p
    else:
        assert problems == []


def test_the_rule_in_one_place():
    st = reader.ClassStat(0, "user3", 12, 5, 1, __import__("numpy").array([5] + [0] * 63), None, None, 0, {}, {})
    assert aggregate.invariant_state(st, 1)[0] == "in_flight"
    assert aggregate.invariant_state(st, 1)[1] == "uncontended 5 + waits 5 + overflow 1 = 11, but acquisitions = 12"
    st.acquisitions = 11
    assert aggregate.invariant_state(st, 1) == ("ok", None)
    st.acquisitions = 14
    assert aggregate.invariant_state(st, 2)[0] == "broken" and aggregate.invariant_state(st, 3)[0] == "in_flight"
