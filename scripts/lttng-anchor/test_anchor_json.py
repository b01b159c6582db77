"""Tests of anchor_json.py (the JSON of scripts/bench-lttng-anchor.sh) on a fixture of one run's
files. Not part of make test; run with: /usr/bin/python3 -m pytest -q scripts/lttng-anchor"""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import anchor_json  # noqa: E402

LIST = """Channels:
-------------
- anchor: [enabled]

    Attributes:
      Event-loss mode:  discard

    Statistics:
      Discarded events: {discarded}
"""
COUNT = """         {recorded} Event messages
              2 Stream beginning messages
              0 Discarded event messages
         {total} messages (TOTAL)
"""


def spinlab_json(cycles, same_cycles, lost=0, error=None):
    def bench(name, c):
        b = {"name": name, "run_type": "iteration", "iterations": 100, "real_time": 1e6,
             "time_unit": "ns", "cycles_per_event": c, "ns_per_event": c / 2.6,
             "cpu_cycles_per_event": c * 0.99, "cpu_ns_per_event": c * 0.99 / 2.6,
             "takes_per_event": 1 / 1024, "events_lost": lost, "tsc_hz": 2.6e9}
        if error:
            b.update(error_occurred=True, error_message=error)
        return b
    return {"context": {}, "benchmarks": [
        bench("BM_UserRingSpinlockEvent/drain_thread:1/real_time", cycles),
        bench("BM_UserRingSpinlockEvent/drain_thread:0/real_time", same_cycles)]}


def write_run(d, lttng_cycles, spinlab_cycles, discarded=0, recorded=None, count=True):
    for r, (lc, sc) in enumerate(zip(lttng_cycles, spinlab_cycles), 1):
        (d / f"spinlab-{r}.json").write_text(json.dumps(spinlab_json(sc, sc - 5)))
        (d / f"lttng-{r}.json").write_text(json.dumps({
            "events": 1000000, "warmup": 100000, "tsc_hz": 2.6e9, "cycles_per_event": lc,
            "ns_per_event": lc / 2.6, "cpu_cycles_per_event": lc, "cpu_ns_per_event": lc / 2.6}))
        (d / f"lttng-list-{r}.txt").write_text(LIST.format(discarded=discarded))
        (d / f"lttng-stop-{r}.txt").write_text("Waiting for data availability\nTracing stopped\n")
        if count:
            rec = 1100000 - discarded if recorded is None else recorded
            (d / f"lttng-count-{r}.txt").write_text(COUNT.format(recorded=rec, total=rec + 2))
        (d / f"lttng-bytes-{r}.txt").write_text("92400000\n")


def test_medians_ratio_and_counts(tmp_path):
    write_run(tmp_path, [350, 340, 500, 345, 348], [100, 102, 98, 101, 99])
    doc = anchor_json.build(tmp_path, 5, {"host_cpu": "X"})
    assert doc["host_cpu"] == "X"
    assert doc["lttng"]["median"]["cycles_per_event"] == 348
    assert doc["spinlab"]["drain_thread"]["median"]["cycles_per_event"] == 100
    assert doc["spinlab"]["same_thread"]["median"]["cycles_per_event"] == 95
    assert doc["ratio_lttng_over_spinlab"]["cycles_per_event"] == pytest.approx(3.48)
    assert doc["ratio_lttng_over_spinlab_same_thread_drain"] == pytest.approx(348 / 95)
    assert doc["ratio_per_round"][2] == pytest.approx(500 / 98)
    assert doc["spinlab_ahead"] is True
    assert doc["lttng"]["events_emitted"] == 5 * 1100000
    assert doc["lttng"]["events_recorded"] == 5 * 1100000
    assert doc["lttng"]["events_discarded"] == 0
    assert doc["lttng"]["recorded_plus_discarded_is_emitted"] is True
    assert doc["spinlab"]["drain_thread"]["rounds"][0]["events"] == 100 * 10000
    assert "LTTng/spinlab 3.48" in doc["summary"]
    assert "recorded 5,500,000 of 5,500,000 events, discarded 0" in doc["summary"]


def test_discards_and_no_count(tmp_path):
    write_run(tmp_path, [300], [100], discarded=1234, count=False)
    doc = anchor_json.build(tmp_path, 1, {})
    assert doc["lttng"]["events_discarded"] == 1234
    assert doc["lttng"]["events_recorded"] is None
    assert doc["lttng"]["recorded_plus_discarded_is_emitted"] is None
    assert "not counted" in doc["summary"] and "discarded 1,234" in doc["summary"]


def test_recorded_and_discarded_disagree(tmp_path):
    write_run(tmp_path, [300], [100], discarded=10, recorded=1000)
    doc = anchor_json.build(tmp_path, 1, {})
    assert doc["lttng"]["recorded_plus_discarded_is_emitted"] is False


def test_spinlab_error_fails(tmp_path):
    write_run(tmp_path, [300], [100])
    (tmp_path / "spinlab-1.json").write_text(json.dumps(spinlab_json(100, 95, error="events miscounted")))
    with pytest.raises(ValueError, match="miscounted"):
        anchor_json.build(tmp_path, 1, {})


def test_main_writes_json_and_summary(tmp_path, capsys):
    write_run(tmp_path, [300, 310, 305], [100, 100, 100])
    out = tmp_path / "out" / "anchor.json"
    assert anchor_json.main(["--work", str(tmp_path), "--rounds", "3", "--out", str(out),
                             "--meta", '{"lttng_version": "2.13.9"}']) == 0
    doc = json.loads(out.read_text())
    assert doc["lttng_version"] == "2.13.9"
    assert capsys.readouterr().out.strip() == doc["summary"]
