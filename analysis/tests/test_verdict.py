"""The verdict on run-basic (2 repetitions: NOT significant) and on a 4-repetition copy
(significant), against hand-derived numbers and the expected text in data/expected/."""
import json
import math
import os

import pytest

from conftest import BASIC, EXPECTED
from spinlab_report import load, summary, verdict
from spinlab_report.confidence import log_ratio


def verdict_of(path):
    run = load.load_run(str(path))
    s = summary.build(run, summary.Options())
    return verdict.build(run, s)


def as_text(v) -> str:
    head, rows = verdict.table(v)
    return verdict.paragraph(v) + "\n\n" + "\n".join(" | ".join(r) for r in [head] + rows) + "\n"


def four_reps(run_copy):
    """run-basic with r3 = r1 and r4 = r2 in both phases: the same effect, twice the repetitions."""
    meta = json.load(open(run_copy / "meta.json"))
    meta["repetitions"] = 4
    json.dump(meta, open(run_copy / "meta.json", "w"))
    for phase in ("idle-host", "host-load"):
        for src, dst in ((1, 3), (2, 4)):
            d = json.load(open(run_copy / "snapshots" / f"{phase}-r{src}.json"))
            d["rep"] = dst
            json.dump(d, open(run_copy / "snapshots" / f"{phase}-r{dst}.json", "w"))
    return run_copy


def test_basic_rates_by_hand():
    v = verdict_of(BASIC)
    idle, load_ = v["phases"]["idle-host"], v["phases"]["host-load"]
    # long waits >= 2^20 per repetition of 1 s: idle 1, 0; host-load 4, 3
    assert idle["per_second"]["values"] == [1.0, 0.0] and load_["per_second"]["values"] == [4.0, 3.0]
    # Student t, 1 df: 12.706 * s / sqrt(2) with s = 0.7071
    assert idle["per_second"]["mean"] == 0.5 and idle["per_second"]["high"] == pytest.approx(0.5 + 6.353, abs=1e-3)
    # acquisitions per repetition: idle 100, 100; host-load 54, 46
    assert idle["per_million_acquisitions"]["values"] == [10000.0, 0.0]
    assert load_["per_million_acquisitions"]["values"] == pytest.approx([4e6 / 54, 3e6 / 46])
    r = load_["per_second"]["vs_baseline"]
    # ratio of geometric means with 0.5 added: sqrt(4.5 * 3.5) / sqrt(1.5 * 0.5)
    assert r["ratio"] == pytest.approx(math.sqrt(4.5 * 3.5 / 0.75))
    # Welch: var of logs / n; t = diff / se = 2.7015, Satterthwaite df = 1.104
    vx, vy = (math.log(4.5 / 3.5)) ** 2 / 2 / 2, (math.log(3.0)) ** 2 / 2 / 2
    assert r["df"] == pytest.approx((vx + vy) ** 2 / (vx ** 2 + vy ** 2))
    assert r["p"] == pytest.approx(0.2063, abs=1e-4) and not verdict.significant(r, 0.95)
    assert load_["lhp"] == {"long_waits": 7, "holder_off": 3, "holder_on": 3, "uncertain": 0,
                            "unknown": 1, "share": 0.5}
    # throughput: geometric means sqrt(500 * 600) vs sqrt(1000 * 1100)
    assert load_["throughput"]["change_pct"] == pytest.approx((math.sqrt(3e5 / 1.1e6) - 1) * 100)
    assert idle["throughput"] is None and idle["per_second"]["vs_baseline"] is None
    # timeline: host-load off 8M + 10.001M + 10M (r1) + 5M + 0.5M (r2) of 4 x 1e9 covered
    assert load_["vcpu_off_share"] == pytest.approx(33.501e6 / 4e9) and idle["vcpu_off_share"] == 0.0


def test_basic_verdict_says_not_significant():
    text = as_text(verdict_of(BASIC))
    assert "NOT significant" in text
    assert text == open(os.path.join(EXPECTED, "verdict-basic.txt")).read()


def test_four_repetitions_make_the_same_ratio_significant(run_copy):
    v = verdict_of(four_reps(run_copy))
    r = v["phases"]["host-load"]["per_second"]["vs_baseline"]
    assert r["ratio"] == pytest.approx(math.sqrt(4.5 * 3.5 / 0.75)) and r["p"] == pytest.approx(0.01474, abs=1e-4)
    assert verdict.significant(r, 0.95)
    text = as_text(v)
    assert ": a significant difference (Welch's t-test on log rates, p = 0.015)" in text
    assert text == open(os.path.join(EXPECTED, "verdict-4reps.txt")).read()


def test_summary_json_carries_the_verdict(basic_report):
    _, paths = basic_report
    s = json.load(open(paths["summary"]))
    assert s["verdict"]["phases"]["host-load"]["per_second"]["vs_baseline"]["p"] == pytest.approx(0.2063, abs=1e-4)
    md = open(paths["md"]).read()
    assert md.index("**Verdict.**") < md.index("## The tail") < md.index("## The run")


def test_missing_baseline_gives_no_verdict(run_copy):
    for rep in (1, 2):
        os.remove(run_copy / "snapshots" / f"idle-host-r{rep}.json")
    assert verdict.paragraph(verdict_of(run_copy)).startswith("No verdict: the baseline phase idle-host has no snapshot")


def test_log_ratio_edge_cases():
    assert log_ratio([2.0], [1.0])["ratio"] == 2.0 and log_ratio([2.0], [1.0])["p"] is None
    same = log_ratio([2.0, 2.0], [1.0, 1.0])
    assert same["ratio"] == pytest.approx(2.0) and same["p"] is None and same["low"] is None
    assert log_ratio([], [1.0])["ratio"] is None
