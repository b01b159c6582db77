"""The freeze injector's names (issue 53: "one vocabulary"): its phases are freeze-<N>ms, its
records freezes/, its priority meta.json's freeze_rt_priority. Results from before the rename say
preempt-<N>ms, preempt/ and preempt_rt_priority: the report reads both alike. (The records'
folder and the phase name in freeze_lengths: tests/test_freeze_lengths.py.)"""
import json
import os
import types

from spinlab_report import contract, fig_wait_ccdf, report_doc
from spinlab_report.reader import Meta

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "data", "old-results")
META = {"phases": ["idle-host", "freeze-30ms"], "repetitions": 2}


def rows(meta):
    return dict(report_doc.meta_rows(Meta.from_json(meta)))


def test_the_injectors_priority_is_a_setting_of_the_run():
    used = {"asked": 10, "used": 10, "fallback": None}
    assert rows({**META, contract.K.freeze_rt_priority: used})["freeze injector"] == "SCHED_FIFO 10"
    refused = {"asked": 10, "used": 0, "fallback": "sched_setscheduler: Operation not permitted"}
    assert rows({**META, contract.K.freeze_rt_priority: refused})["freeze injector"] == (
        "normal priority (asked SCHED_FIFO 10: sched_setscheduler: Operation not permitted)")
    # no freeze phase started the injector (used null), or a meta.json without the key: no row
    assert "freeze injector" not in rows({**META, contract.K.freeze_rt_priority: {"asked": 10, "used": None,
                                                                                  "fallback": None}})
    assert "freeze injector" not in rows(META)


def test_the_old_key_preempt_rt_priority_is_read_as_its_old_name():
    assert contract.OLD_KEYS[contract.K.freeze_rt_priority] == "preempt_rt_priority"
    refused = {"asked": 10, "used": 0, "fallback": "no permission"}
    assert rows({**META, "preempt_rt_priority": refused})["freeze injector"] == (
        "normal priority (asked SCHED_FIFO 10: no permission)")
    # the new key wins where a meta.json has both
    both = {**META, "preempt_rt_priority": refused, contract.K.freeze_rt_priority: dict(refused, used=10)}
    assert rows(both)["freeze injector"].startswith("SCHED_FIFO 10")


def test_kept_old_results_carry_the_old_key_and_it_is_read():
    """The recorded runs (data/old-results, written before issue 53) say preempt_rt_priority."""
    for name in sorted(os.listdir(OLD)):
        path = os.path.join(OLD, name, "meta.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            meta = json.load(f)
        assert contract.K.freeze_rt_priority not in meta and "preempt_rt_priority" in meta, name
        assert contract.get_renamed(meta, contract.K.freeze_rt_priority) == {"asked": 10, "used": None,
                                                                             "fallback": None}, name


def test_the_ccdf_marks_the_freeze_length_of_freeze_phases_new_and_old():
    meta = Meta.from_json({"guest_tsc_hz": 1_000_000_000, "host": {"cpus": 2}})
    marks = fig_wait_ccdf.marks(types.SimpleNamespace(meta=meta, phases=["idle-host", "freeze-30ms", "preempt-10ms"]),
                                1 << 20)
    assert [label for _, label in marks] == ["threshold 2^20", "freeze 10 ms", "freeze 30 ms"]
    assert [c for c, _ in marks][1:] == [10e6, 30e6]
    # without a freeze phase: the host's slice instead
    plain = fig_wait_ccdf.marks(types.SimpleNamespace(meta=meta, phases=["idle-host", "host-load"]), 1 << 20)
    assert [label for _, label in plain][1].startswith("host slice")
