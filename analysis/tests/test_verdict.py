"""The verdict: its LHP headline on a synthetic run built here (long waits fall under load while
the waits behind a preempted holder rise), its warnings, the kernel-lock spin share (exact and
as a bucket-edge range), the causes of long waits; and its secondary rates on run-basic
(2 repetitions: NOT significant) and a 4-repetition copy (significant), against hand-derived
numbers and the expected text in data/expected/."""
import json
import math
import os

import numpy as np
import pytest

from conftest import BASIC, EXPECTED
from spinlab_report import aggregate, reader, report_doc, summary, verdict
from spinlab_report.confidence import log_ratio

GHZ = 1_000_000_000  # guest TSC at 1 GHz; one repetition is 1 s
WAIT = 2_000_000     # every synthetic long wait: 2M cycles, bucket 2^20
HOST_OFFSET = 1000   # host TSC = guest TSC + 1000


def verdict_of(path):
    run = reader.load_run(str(path))
    s = summary.build(run, summary.Options())
    return verdict.build(run, s)


def as_text(v) -> str:
    head, rows = verdict.table(v)
    return verdict.paragraph(v) + "\n\n" + "\n".join(" | ".join(r) for r in [head] + rows) + "\n"


# A synthetic run: 3 vCPUs, waiter on vCPU 0, holders on vCPUs 1 and 2 -------------------------

def long_wait(start, kind):
    """One long wait of WAIT cycles from guest TSC start, and the vCPUs off during it.
    kind: holder-off, waiter-off, both, slow (holder 1 ran throughout), queued (holder 1 then 2)."""
    w = {"cpu": 0, "lock_class": "user0", "start_tsc": start, "wait_cycles": WAIT, "holder_cpu": 1,
         "lhp_class": "unknown"}
    if kind == "queued":
        w["holder_end_cpu"] = 2
    off = {"holder-off": [1], "waiter-off": [0], "both": [0, 1]}.get(kind, [])
    return w, off


def rep_files(phase, rep, kinds, kernel_cycles, idle_vcpu2_off=0.0, sums=True):
    """(snapshot dict, timeline rows) of one 1 s repetition whose long waits are `kinds`."""
    t0 = (2 * rep + (phase == "host-load")) * 2 * GHZ
    waits, rows, offs = [], [], {0: [], 1: [], 2: []}
    for i, kind in enumerate(kinds):
        w, off = long_wait(t0 + (i + 1) * 10 * WAIT, kind)
        waits.append(w)
        for v in off:  # off for the whole wait
            offs[v].append((w["start_tsc"] + HOST_OFFSET, w["start_tsc"] + HOST_OFFSET + WAIT))
    if idle_vcpu2_off:
        offs[2].append((t0 + HOST_OFFSET + 1, t0 + HOST_OFFSET + 1 + int(idle_vcpu2_off * GHZ)))
    for v in (0, 1, 2):
        at = t0 + HOST_OFFSET
        for a, b in offs[v]:
            rows += [(v, "on", at, a), (v, "off", a, b)]
            at = b
        rows.append((v, "on", at, t0 + HOST_OFFSET + GHZ))
    def cls(hist, cycles, holds=None):
        d = {"acquisitions": sum(hist.values()) + 100, "uncontended": 100, "wait_overflow": 0,
             "wait_hist": {str(k): n for k, n in hist.items()}, "hold_hist": {str(k): n for k, n in (holds or {}).items()}}
        if sums:
            d["wait_cycles_sum"] = cycles
        return d
    kernel_hist = {10: kernel_cycles // 1500}  # waits of 1500 cycles: bucket 2^10
    snap = {"format": 1, "phase": phase, "rep": rep, "start": {"guest_tsc": t0}, "end": {"guest_tsc": t0 + GHZ},
            "duration_s": 1.0, "workload": {"lockbench": {"ops_per_s": 1000.0 if phase == "idle-host" else 400.0}},
            "cpus": [{"cpu": 0, "classes": {"user0": cls({20: len(kinds)}, WAIT * len(kinds), {20: 3}),
                                            "sched": cls(kernel_hist, kernel_cycles)}},
                     {"cpu": 1, "classes": {"user0": cls({}, 0)}}, {"cpu": 2, "classes": {"user0": cls({}, 0)}}],
            "long_waits": waits, "long_wait_threshold": 1 << 20, "long_waits_dropped": 0}
    return snap, [(v, 100 + v, s, a, b, phase, rep) for v, s, a, b in rows if b > a]


# Long waits fall under load (idle 40/44/38 per s, load 12/10/14) while the waits behind a
# preempted holder rise (idle 0/1/0, load 9/7/9: holder preempted, or both); kernel-lock spinning rises from ~0.07% to ~5%.
IDLE = [["slow"] * 38 + ["queued"] * 2, ["slow"] * 41 + ["queued"] * 2 + ["holder-off"], ["slow"] * 38]
LOAD = [["holder-off"] * 8 + ["waiter-off", "both", "queued", "slow"], ["holder-off"] * 7 + ["slow"] * 3,
        ["holder-off"] * 9 + ["slow"] * 5]
KERNEL = {"idle-host": [2_100_000, 2_250_000, 1_950_000], "host-load": [150_000_000, 159_000_000, 141_000_000]}


def make_run(path, hypervisor=False, idle_vcpu2_off=0.0, sums=True):
    os.makedirs(path / "snapshots")
    meta = {"format": 1, "run_id": "synthetic", "host": {"cpus": 16, "hypervisor": hypervisor}, "accelerator": "kvm",
            "vcpus": 3, "guest_tsc_hz": GHZ, "phases": ["idle-host", "host-load"], "repetitions": 3}
    json.dump(meta, open(path / "meta.json", "w"))
    json.dump({"format": 1, "state": "complete", "reason": "", "done": []}, open(path / "status.json", "w"))
    json.dump({"format": 1, "offset_cycles": HOST_OFFSET, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10,
               "points": [[0, HOST_OFFSET, 10.0], [20 * GHZ, HOST_OFFSET, 10.0]]}, open(path / "clock.json", "w"))
    lines = ["vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep"]
    for phase, reps in (("idle-host", IDLE), ("host-load", LOAD)):
        for rep, kinds in enumerate(reps, 1):
            snap, rows = rep_files(phase, rep, kinds, KERNEL[phase][rep - 1],
                                   idle_vcpu2_off if phase == "idle-host" else 0.0, sums)
            json.dump(snap, open(path / "snapshots" / f"{phase}-r{rep}.json", "w"))
            lines += [",".join(map(str, r)) for r in rows]
    open(path / "timeline.csv", "w").write("\n".join(lines) + "\n")
    return path


def by_hand_log_ratio(x, y):
    return math.exp(np.mean(np.log(x)) - np.mean(np.log(y)))


def test_headline_shows_the_rise_behind_preempted_holders_while_long_waits_fall(tmp_path):
    v = verdict_of(make_run(tmp_path / "run"))
    idle, load_ = v["phases"]["idle-host"], v["phases"]["host-load"]
    # headline 1: holder-off waits per rep (holder preempted, and both in r1) x 2M cycles over
    # 3 vCPU-seconds
    cyc = load_["lhp_spin"]["cycles_per_vcpu_second"]
    assert cyc["values"] == pytest.approx([9 * WAIT / 3, 7 * WAIT / 3, 9 * WAIT / 3])
    assert idle["lhp_spin"]["cycles_per_vcpu_second"]["values"] == pytest.approx([0, WAIT / 3, 0])
    half = 0.5 * (1 << 20)  # half a threshold's cycles before the log
    assert cyc["vs_baseline"]["ratio"] == pytest.approx(
        by_hand_log_ratio([(n * WAIT + half) / 3 for n in (9, 7, 9)], [(n * WAIT + half) / 3 for n in (0, 1, 0)]))
    assert cyc["vs_baseline"]["ratio"] > 10 and verdict.significant(cyc["vs_baseline"], 0.95)
    assert load_["lhp_spin"]["share_of_vcpu_time"]["mean"] == pytest.approx(25 / 3 * WAIT / 3e9)
    waits = load_["lhp_spin"]["waits_per_second"]
    assert waits["values"] == [9.0, 7.0, 9.0] and waits["vs_baseline"]["ratio"] == pytest.approx(
        by_hand_log_ratio([9.5, 7.5, 9.5], [0.5, 1.5, 0.5]))
    assert verdict.significant(waits["vs_baseline"], 0.95)
    # secondary: every listed wait is >= 2^20, so the histograms count 40/44/38 and 12/10/14
    ps = load_["per_second"]
    assert idle["per_second"]["values"] == [40.0, 44.0, 38.0] and ps["values"] == [12.0, 10.0, 14.0]
    assert ps["vs_baseline"]["ratio"] < 0.35 and verdict.significant(ps["vs_baseline"], 0.95)
    # the text leads with the rise and calls the fall secondary
    text = verdict.paragraph(v)
    at = text.index("In host-load")
    assert text.index("behind a preempted holder", at) < text.index("Secondary: waits of 2^20", at)
    assert "counting long waits hides the LHP signal" in text
    head, rows = verdict.table(v)
    assert head[2].startswith("spin behind a preempted holder") and head[-2].startswith("secondary: waits ≥ 2^20")
    assert rows[1][2].startswith("5.56 M (") and ", significant" in rows[1][2]
    assert rows[1][-2].startswith("12.0 (") and ", significant" in rows[1][-2]
    assert v["warnings"] == []


def test_only_the_cycles_inside_the_repetition_count(tmp_path):
    """The trace lists waits before and after the counters' window: a wait that began before the
    repetition counts from its start, one that ended after it up to its end, one after it not."""
    path = make_run(tmp_path / "run")
    f = path / "snapshots" / "host-load-r1.json"
    d = json.load(open(f))
    t0 = d["start"]["guest_tsc"]
    edge = {"cpu": 0, "lock_class": "sched", "wait_cycles": WAIT, "holder_cpu": 1, "lhp_class": "holder-preempted"}
    d["long_waits"] += [{**edge, "start_tsc": t0 - WAIT // 4},            # 3/4 inside, counted at its end
                        {**edge, "start_tsc": t0 + GHZ - WAIT // 2},      # 1/2 inside, not in the counters
                        {**edge, "start_tsc": t0 + GHZ + 10}]             # after the repetition
    sched = d["cpus"][0]["classes"]["sched"]  # the counters take the first whole
    sched["wait_hist"]["20"] = 1
    sched["wait_cycles_sum"] += WAIT
    sched["acquisitions"] += 1
    json.dump(d, open(f, "w"))
    v = verdict_of(path)
    load_ = v["phases"]["host-load"]
    # outside the host timeline: steal time says the holder was off, the waiter side is unknown
    assert load_["lhp_spin"]["cycles_per_vcpu_second"]["values"][0] == pytest.approx((9 + 3 / 4 + 1 / 2) * WAIT / 3)
    assert load_["lhp_spin"]["waits_per_second"]["values"][0] == 11.0
    assert load_["causes"]["long_waits"] == 38 and load_["causes"]["unknown"] == 2
    k = load_["kernel_spin"]
    assert k["edge_cycles"] == -WAIT / 4 + WAIT / 2
    assert k["share"]["values"][0] == pytest.approx((KERNEL["host-load"][0] + WAIT * 5 / 4) / 3e9)


def test_waits_that_overlap_on_one_vcpu_count_their_common_time_once(tmp_path):
    """A ring-3 wait interrupted by a kernel wait on the same vCPU: the vCPU spun once."""
    path = make_run(tmp_path / "run")
    f = path / "snapshots" / "host-load-r2.json"
    d = json.load(open(f))
    first = d["long_waits"][0]  # holder 1 off for the whole of it
    d["long_waits"].append({**first, "lock_class": "sched", "start_tsc": first["start_tsc"] + 400_000,
                            "wait_cycles": 1_200_000})
    json.dump(d, open(f, "w"))
    v = verdict_of(path)
    spin = v["phases"]["host-load"]["lhp_spin"]
    # r2: 7 waits of WAIT behind holder 1 while it was off, plus one inside the first: still 7 WAIT
    assert spin["waits_per_second"]["values"][1] == 8.0
    assert spin["cycles_per_vcpu_second"]["values"][1] == pytest.approx(7 * WAIT / 3)


def test_causes_of_long_waits(tmp_path):
    v = verdict_of(make_run(tmp_path / "run"))
    c = v["phases"]["host-load"]["causes"]
    assert (c["long_waits"], c["holder-preempted"], c["waiter-preempted"], c["both"], c["neither"]) == (36, 24, 1, 1, 10)
    assert (c["slow_holder"], c["queued"], c["uncertain"], c["unknown"]) == (9, 1, 0, 0)
    assert c["holds_ge_threshold"] == 9  # 3 timed holds in bucket 2^20 per repetition
    idle = v["phases"]["idle-host"]["causes"]
    assert (idle["slow_holder"], idle["queued"], idle["holder-preempted"]) == (117, 4, 1)
    # by the holder's side: holder preempted and both are off, the rest on
    assert v["phases"]["host-load"]["lhp"] == {"long_waits": 36, "holder_off": 25, "holder_on": 11, "uncertain": 0,
                                               "unknown": 0, "holder_blocked": 0, "possibly_preempted": 0,
                                               "share": 25 / 36}
    assert ("holder preempted 24, waiter preempted 1, both 1, holder running 10 (9 slow holder(s), "
            "1 queued behind other holders), uncertain 0, unknown 0") in verdict.paragraph(v)


def test_running_holder_kind_from_the_hand_over_chain():
    w = {"cpu": 0, "start_tsc": 1000, "wait_cycles": 3_000_000, "holder_cpu": 1, "holder_end_cpu": 2}
    assert verdict.running_kind(w, 1 << 20) == "queued"  # holder changed, hand-over not placed
    assert verdict.running_kind({**w, "holder_end_cpu": 1}, 1 << 20) == "slow_holder"
    assert verdict.running_kind({**w, "holder_cpu": None, "holder_end_cpu": None}, 1 << 20) == "holder_not_known"
    # 1 held 2.5M of the wait, then 2: one slow hold
    assert verdict.running_kind({**w, "holds": [[1, None], [2, 2_501_000]]}, 1 << 20) == "slow_holder"
    # three holds of 1M each: a queue
    chain = [[1, None], [2, 1_001_000], [3, 2_001_000]]
    assert verdict.hold_lengths({**w, "holds": chain}) == [1_000_000, 1_000_000, 1_000_000]
    assert verdict.running_kind({**w, "holds": chain}, 1 << 20) == "queued"
    # a hand-over not placed: its neighbours' lengths are unknown, not guessed
    assert verdict.hold_lengths({**w, "holds": [[1, None], [2, None], [3, 2_001_000]]}) == [None, None, 1_000_000]


def test_kernel_lock_spin_share_exact(tmp_path):
    v = verdict_of(make_run(tmp_path / "run"))
    k = v["phases"]["host-load"]["kernel_spin"]
    assert k["exact"] and k["classes"] == ["sched"]  # user0 (ring 3) is not a kernel lock
    assert k["share"]["values"] == pytest.approx([c / 3e9 for c in KERNEL["host-load"]])
    assert k["lo"] == k["hi"] == pytest.approx(k["share"]["mean"]) == pytest.approx(0.05)
    assert k["share"]["vs_baseline"]["ratio"] == pytest.approx(by_hand_log_ratio(KERNEL["host-load"], KERNEL["idle-host"]))
    assert "Spinning on kernel locks took 5.00% of vCPU time" in verdict.paragraph(v)


def test_kernel_lock_spin_share_from_histograms_is_a_range(tmp_path):
    v = verdict_of(make_run(tmp_path / "run", sums=False))
    k = v["phases"]["host-load"]["kernel_spin"]
    # waits of 1500 cycles counted in bucket 2^10: between 1024 and 2048 cycles each
    n = [c // 1500 for c in KERNEL["host-load"]]
    assert not k["exact"]
    assert k["lo"] == pytest.approx(np.mean([x * 1024 / 3e9 for x in n]))
    assert k["hi"] == pytest.approx(np.mean([x * 2048 / 3e9 for x in n]))
    assert k["share"]["mean"] == pytest.approx(np.mean([x * 1024 / math.log(2) / 3e9 for x in n]))
    assert k["lo"] < 0.05 < k["hi"]  # the true share lies inside the stated range
    head, rows = verdict.table(v)
    assert rows[1][4].startswith(f"{verdict.g3(100 * k['lo'])}%–{verdict.g3(100 * k['hi'])}% (bucket edges; estimate")


def test_warns_when_the_baseline_was_not_idle(tmp_path):
    v = verdict_of(make_run(tmp_path / "run", idle_vcpu2_off=0.4))
    # vCPU 2 off 0.4 s of each 1 s repetition, vCPU 1 off one 2M wait in r2: of 9 vCPU-seconds
    assert v["phases"]["idle-host"]["vcpu_off_share"] == pytest.approx((3 * 0.4e9 + WAIT) / 9e9)
    assert len(v["warnings"]) == 1 and v["warnings"][0].startswith(
        "The baseline idle-host was not idle: its vCPUs were off the host CPU 13% of the time")
    assert verdict_of(make_run(tmp_path / "quiet", idle_vcpu2_off=0.1))["warnings"] == []  # 3.4%: idle enough


def test_warns_when_the_host_is_nested(tmp_path):
    run = reader.load_run(str(make_run(tmp_path / "run", hypervisor=True)))
    s = summary.build(run, summary.Options())
    s["verdict"] = verdict.build(run, s)
    assert len(s["verdict"]["warnings"]) == 1 and "The host is itself a virtual machine" in s["verdict"]["warnings"][0]
    doc = report_doc.document(run, s, "", aggregate.counters(run).classes, {k: None for k in ("wait_ccdf", "wait_cdf", "wait_cdf_phases", "wait_hist",
                                                          "hold_cdf", "class_waits", "cpu_heatmap", "holder_off_scatter",
                                                          "long_wait_window", "throughput")}, [], summary.Options())
    assert [b[0] for b in doc[:4]] == ["h1", "lead", "warning", "table"]  # under the verdict, above its table


def test_without_a_timeline_the_baseline_idleness_is_said_unknown(tmp_path):
    path = make_run(tmp_path / "run")
    os.remove(path / "timeline.csv")
    v = verdict_of(path)
    assert v["warnings"] == ["Whether the baseline idle-host ran on an idle host is unknown: there is no host "
                             "timeline of its vCPUs."]


# run-basic: the secondary rates by hand, the text against data/expected ------------------------

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
    # kernel lock (sched) spin: idle r1 one wait of 1.1M cycles over 2 vCPUs x 1e9 cycles, r2 none
    assert idle["kernel_spin"]["share"]["values"] == [1.1e6 / 2e9, 0.0] and idle["kernel_spin"]["exact"]
    assert load_["kernel_spin"]["share"]["vs_baseline"] is None  # no kernel spinning at all: not tested
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
    # the copies r3 and r4 lie outside the host timeline: their long waits cannot be attributed,
    # so their LHP figures are unknown, not 0
    lhp_spin = v["phases"]["host-load"]["lhp_spin"]
    assert lhp_spin["repetitions_attributed"] == 2 and lhp_spin["waits_per_second"]["n"] == 2
    text = as_text(v)
    assert "occurred 3.50 times per second (95% CI 2.58 … 4.42), ×4.58 the baseline (95% CI 1.72 … 12.2; p = 0.015, significant)" in text
    assert text == open(os.path.join(EXPECTED, "verdict-4reps.txt")).read()


def test_summary_json_carries_the_verdict(basic_report):
    _, paths = basic_report
    s = json.load(open(paths["summary"]))
    assert s["verdict"]["phases"]["host-load"]["per_second"]["vs_baseline"]["p"] == pytest.approx(0.2063, abs=1e-4)
    assert set(s["verdict"]["phases"]["host-load"]) >= {"lhp_spin", "kernel_spin", "causes"}
    assert s["verdict"]["warnings"] == []
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
