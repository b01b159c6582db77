"""One implementation of each LHP rule (issue 40): the package computes them over arrays
(spinlab_report/lhp.py), and their per-wait definition lives here, in the tests only
(lhp_reference.py). On random waits of every holder kind against random timelines, the arrays give
exactly (floats included) the numbers the definition gives wait by wait, and the package never
calls the definition."""
import ast
import json
import os

import numpy as np
import pandas as pd
import pytest

import lhp_reference as ref
from spinlab_report import attribution, lhp_share, waits
from spinlab_report.lhp import ClockMap, off_index
from spinlab_report.names import LHP_CLASS
from spinlab_report.reader import Snapshot
from test_scaling import random_timeline

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spinlab_report")


def _per_wait_rows(snap, timeline, clock, threshold, rule_cpus=0, counts=None):
    """The definition: ref.measure and ref.attribute of each wait, one by one (and ref._count of
    each into counts, when given)."""
    cmap = ClockMap(clock)
    index = off_index(timeline, snap.phase, snap.rep)
    index_pre = off_index(timeline, snap.phase, snap.rep, blocked=False)
    rows = []
    for w in snap.long_waits:
        if w["wait_cycles"] < threshold:
            continue
        m = ref.measure(w, index, cmap, index_pre, rule_cpus)
        r = ref.attribute(w, m)
        if counts is not None:
            ref._count(counts, w, m, r)
            counts["outside_repetition"] += not ref.ended_inside(w, snap)
        m = {k: v for k, v in m.items() if k != "preempted"}
        rows.append({**w, "rep": snap.rep, **m, **r, "in_repetition": ref.ended_inside(w, snap)})
    return rows


def random_waits(rng, n, vcpus, span):
    """Long waits with every kind of holder: one, none known, changed at start/end, hand-over
    chains placed, unplaced and mixed; every steal-time class."""
    out = []
    for _ in range(n):
        start, wait = int(rng.integers(0, span)), int(rng.integers(1, 4000))
        h0, h1 = (int(x) if x < vcpus else None for x in rng.integers(0, vcpus + 1, 2))
        w = {"cpu": int(rng.integers(0, vcpus)), "lock_class": str(rng.choice(["user0", "sched"])), "start_tsc": start,
             "wait_cycles": wait, "holder_cpu": h0, "holder_end_cpu": h1 if rng.random() < 0.3 else h0,
             "lhp_class": str(rng.choice(list(LHP_CLASS.names))),
             "holds": None, "holder_steal_ns": None, "waiter_steal_ns": None}
        if rng.random() < 0.3:
            k = int(rng.integers(1, 4))
            w["holds"] = [[int(rng.integers(0, vcpus)), None]] + [
                [int(rng.integers(0, vcpus)), None if rng.random() < 0.4 else start + int(rng.integers(-50, wait + 50))]
                for _ in range(k)]
        out.append(w)
    return out


@pytest.mark.parametrize("with_points", [True, False])
def test_attribution_over_arrays_is_the_per_wait_definition(with_points):
    """lhp.classify (numpy) lists every long wait exactly as ref.measure + ref.attribute do
    one by one: random waits of every holder kind against a random timeline with off, frozen and
    unknown rows, a clock with points (bounds vary, waits outside are not placed) or a straight line."""
    rng = np.random.default_rng(11)
    timeline = pd.DataFrame(random_timeline(rng, vcpus=3, n=300))
    clock = ({"offset_cycles": 0, "drift_ppm": 0.0, "ref_guest_tsc": 0,
              "points": [[2000, 5, 3.0], [40_000, 9, 1.0], [70_000, 2, 0.0]]} if with_points else
             {"offset_cycles": 7, "drift_ppm": 2.0, "ref_guest_tsc": 0, "bound_max_cycles": 4.0, "points": []})
    listed = random_waits(rng, 3000, 4, 80_000)
    snap = Snapshot("p", 1, 1.0, 1000, 75_000, {}, [], listed, 1, 0, "s")
    share = attribution.long_waits_share([snap], timeline, clock, 200)
    got = list(share["waits"])
    want = _per_wait_rows(snap, timeline, clock, 200)
    assert len(got) == len(want) > 2000
    for g, w in zip(got, want):
        assert g == w, (g, w)
    # the counts, as ref._count adds each wait and ref.fraction_table bins them
    counts = lhp_share.new_share()
    for row in want:
        m = {k: row[k] for k in ("timeline_holder", "timeline_waiter", "timeline_holder_any", "timeline_waiter_any",
                                 "timeline_class", "holders")}
        ref._count(counts, row, m, row)
        counts["outside_repetition"] += not row["in_repetition"]
    counts["holder_off_fraction"] = ref.fraction_table(want)
    for key in ("long_waits", "holder_off", "holder_on", "uncertain", "unknown", "from_guest", "from_timeline",
                "holder_changed", "handovers_placed", "handovers_unplaced", "outside_repetition", "sources",
                "disagreements", "agreement", "holder_off_fraction"):
        assert json.dumps(share[key]) == json.dumps(counts[key]), key  # key order too (summary.json)
    kinds = {(r["timeline_holder"], r["holder_source"]) for r in want}
    assert {("off", "timeline"), ("on", "timeline"), ("uncertain", "timeline"), ("unknown", "steal"),
            ("unknown", "none")} <= kinds  # every outcome drawn
    assert sum(1 for r in want if r["holds"] and any(f is None for _, f in r["holds"][1:])) > 100


def test_blocked_holders_and_rule_holders_over_arrays_are_the_per_wait_definition():
    """Off rows whose thread blocked by itself (preemptor 'blocked') and waits whose holder a rule
    names (a Linux guest: any other of 3 vCPUs) are classed by the arrays exactly as the per-wait
    definition does: holder_blocked, possibly_preempted, the off cycles that were blocked."""
    rng = np.random.default_rng(5)
    rows = random_timeline(rng, vcpus=3, n=300)
    for r in rows:
        r["preemptor"] = (str(rng.choice(["blocked", "hog", "host-task"])) if r["state"] == "off" else
                          "freeze" if r["state"] == "frozen" else None)
    timeline = pd.DataFrame(rows)
    clock = {"offset_cycles": 0, "drift_ppm": 0.0, "ref_guest_tsc": 0,
             "points": [[2000, 5, 3.0], [40_000, 9, 1.0], [70_000, 2, 0.0]]}
    listed = random_waits(rng, 3000, 3, 80_000)
    lw = waits.LongWaits.of(listed)
    by_rule = np.array([w["holder_cpu"] is None and w["holder_end_cpu"] is None and not w["holds"] and rng.random() < 0.7
                        for w in listed])
    lw.holder_by_rule, lw.rule_cpus = by_rule, 3
    for w, r in zip(listed, by_rule):
        if r:
            w["holder_by_rule"] = True
    snap = Snapshot("p", 1, 1.0, 1000, 75_000, {}, [], lw, 1, 0, "s")
    share = attribution.long_waits_share([snap], timeline, clock, 200)
    counts = lhp_share.new_share()
    want = _per_wait_rows(Snapshot("p", 1, 1.0, 1000, 75_000, {}, [], listed, 1, 0, "s"), timeline, clock, 200,
                          rule_cpus=3, counts=counts)
    got = list(share["waits"])
    assert len(got) == len(want) > 2000
    for g, w in zip(got, want):
        assert g == w, (g, w)
    for key in ("long_waits", "holder_off", "holder_on", "uncertain", "unknown", "holder_blocked",
                "possibly_preempted", "sources", "disagreements"):
        assert json.dumps(share[key]) == json.dumps(counts[key]), key
    for side in ("holder", "waiter"):
        for k in ("off", "blocked"):
            assert share["off_cycles"][side][k] == pytest.approx(counts["off_cycles"][side][k], rel=1e-12)
    sides = {r["holder_side"] for r in want}
    assert {"off", "on", "blocked", "possibly_off", "uncertain"} <= sides, sides  # every outcome drawn
    assert share["off_cycles"]["holder"]["blocked"] > 0


def test_the_package_never_calls_the_per_wait_definition():
    """No module of the package imports the reference, and none defines the per-wait rules again
    (measure, attribute, _count: the reference's names)."""
    defined = {n.name for n in ast.walk(ast.parse(open(ref.__file__).read())) if isinstance(n, ast.FunctionDef)}
    assert {"measure", "attribute", "_count", "fraction_table", "ended_inside"} <= defined
    for f in sorted(os.listdir(PACKAGE)):
        if not f.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(PACKAGE, f)).read())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "lhp_reference" not in imported, f
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not names & {"measure", "attribute", "_count", "ended_inside", "pieces_off_range"}, f
