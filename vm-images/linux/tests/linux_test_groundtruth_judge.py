"""groundtruth.judge and judge_control on made-up figures: what is a pass, a fail, and 'not
judged' (the premise a busy host can break). No QEMU; the real runs are in
linux_test_ground_truth.py."""
import copy

import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import groundtruth

HZ = 2_600_000_000


def ev(**kw):
    e = {"ncpus": 2, "holder_cpu": 1, "host_tsc_hz": HZ, "freeze_ms": 30,
         "freeze": {"vcpus": [1], "freeze_ms": 30, "period_ms": 100},
         "recorders": {"freeze": 0, "timeline": 0},
         "freezes": {"1": 200}, "freezes_on_holder": 120, "freezes_on_holder_others_on": 90,
         "freezes_on_holder_waited": 88,
         "clock": {"bound_at_frozen_holder_waits_cycles": {"median": 900_000, "p90": 1_500_000,
                                                           "max": 2_000_000}},
         "ground_truth": {"frozen_holder_waits": 85, "meets_bar": True,
                          "bar": "at 2 vCPUs: at least 95 % holder-preempted and none holder-ran",
                          "counts": {"holder-preempted": 85, "holder-ran": 0}},
         "known_holder_ran_classes": {"holder-ran": 900, "uncertain": 80},
         "frozen_waiter_classes": {}}
    for k, v in kw.items():
        e[k] = v
    return e


def test_pass():
    assert groundtruth.judge(ev()) == ("pass", [ev()["ground_truth"]["bar"]])


def test_the_bar_missed_is_a_fail():
    e = ev()
    e["ground_truth"] = dict(e["ground_truth"], meets_bar=False)
    assert groundtruth.judge(e)[0] == "fail"


def test_busy_host_premises_are_not_judged():
    v, why = groundtruth.judge(ev(recorders={"freeze": 0, "timeline": 2}))
    assert v == "not judged" and "lost events" in why[0]
    v, why = groundtruth.judge(ev(freezes_on_holder=12, freezes_on_holder_others_on=10,
                                  freezes_on_holder_waited=10))
    assert v == "not judged" and "12 effective freezes caught the holder" in why[0]
    e = ev()
    e["ground_truth"] = dict(e["ground_truth"], frozen_holder_waits=7)
    v, why = groundtruth.judge(e)
    assert v == "not judged" and "7 waits behind a frozen holder, fewer than 20" in why[0]
    # a clock bound past an eighth of the freeze (3.75 ms) at the 90th percentile
    e = ev(clock={"bound_at_frozen_holder_waits_cycles": {"median": 1, "p90": int(0.004 * HZ),
                                                           "max": 1}})
    v, why = groundtruth.judge(e)
    assert v == "not judged" and "exceeds an eighth of the freeze (3.75 ms)" in why[0]


def test_freezes_that_caught_the_holder_without_a_wait_fail_even_on_a_busy_host():
    e = ev(freezes_on_holder_waited=40)                   # of 90: waits lost
    v, why = groundtruth.judge(e)
    assert v == "fail" and "only 40 of them were spanned by a long wait" in why[0]
    e["ground_truth"] = dict(e["ground_truth"], frozen_holder_waits=3)   # and few waits: still
    assert groundtruth.judge(e)[0] == "fail"


def control(**kw):
    e = ev(freeze={"vcpus": [0], "freeze_ms": 30, "period_ms": 100}, freezes={"0": 200},
           freezes_on_holder=0, freezes_on_holder_others_on=0, freezes_on_holder_waited=0,
           frozen_waiter_classes={"holder_not_frozen": {"holder-ran": 70, "holder-preempted": 20}})
    e["ground_truth"] = dict(e["ground_truth"], frozen_holder_waits=3)
    e.update(kw)
    return e


def test_control():
    e = control()
    assert groundtruth.is_control(e) and not groundtruth.is_control(ev())
    assert groundtruth.judge_control(e)[0] == "pass"
    bad = copy.deepcopy(e)
    bad["known_holder_ran_classes"]["holder-preempted"] = 1
    v, why = groundtruth.judge_control(bad)
    assert v == "fail" and "1 waits whose known holder ran classed holder-preempted" in why[0]
    bad = control(frozen_waiter_classes={"holder_not_frozen": {"holder-ran": 10, "holder-preempted": 30}})
    v, why = groundtruth.judge_control(bad)
    assert v == "fail" and "of 40 waits of a frozen waiter, only 10 holder-ran" in why[0]
    bad = copy.deepcopy(e)
    bad["ground_truth"]["frozen_holder_waits"] = 25
    assert "25 waits behind a frozen holder, more than" in groundtruth.judge_control(bad)[1][0]
    v, why = groundtruth.judge_control(control(frozen_waiter_classes={}))
    assert v == "not judged" and "0 waits of a frozen waiter" in why[0]
