"""freeze_lengths: the report says when a freeze phase's freezes held the vCPU longer than planned;
and the names of freeze phases and their records, with the old ones (preempt-<N>ms, preempt/) that
results from before issue 53 used."""
import types

from spinlab_report import freeze_lengths, verdict
from spinlab_report.reader import Meta

# hypervisor-hooks/freezes/freeze_record.cc's header
HEADER = ("seq,tid,vcpu,planned_begin_tsc,planned_end_tsc,begin_tsc,marked_tsc,frozen_tsc,end_tsc,thawed_tsc,"
          "stopped_tsc,resumed_tsc,effective,planned_begin_ns,planned_end_ns,begin_ns,marked_ns,frozen_ns,end_ns,"
          "thawed_ns,stopped_ns,resumed_ns")


def row(seq, planned_ms, applied_ms, old=False):
    """One freeze planned at seq * 100 ms, marked 0.01 ms after, thawed `applied_ms` after the mark."""
    begin = 1_000_000_000 + seq * 100_000_000
    marked = begin + 10_000
    thawed = marked + int(applied_ms * 1e6)
    ns = [begin, begin + int(planned_ms * 1e6), begin, marked, 0, thawed - 5_000, thawed, marked, thawed + 1_000]
    if old:
        ns.pop(6)
    tsc = [3 * v for v in ns]
    return ",".join(map(str, [seq, 77, 0] + tsc[:-2] + [tsc[-2], tsc[-1], "ok"] + ns))


def run_with(tmp_path, rows_by_file, meta=None, header=HEADER, folder="freezes"):
    (tmp_path / folder).mkdir(exist_ok=True)
    for name, rows in rows_by_file.items():
        (tmp_path / folder / name).write_text("\n".join([header] + rows) + "\n")
    return types.SimpleNamespace(path=str(tmp_path), meta=Meta.from_json(meta or {}))


def test_a_steady_freezer_gives_no_warning(tmp_path):
    run = run_with(tmp_path, {"freeze-30ms-r0.csv": [row(i, 30, 30.02) for i in range(10)]})
    lengths = freeze_lengths.phase_lengths(run.path)["freeze-30ms"]
    assert lengths["freezes"] == 10
    assert abs(lengths["applied_ms"] - 30.02) < 1e-6
    assert not freeze_lengths.ran_long(lengths)
    assert freeze_lengths.warnings(run) == []


def test_freezes_3_ms_long_are_named_with_the_measured_thaw_write(tmp_path):
    meta = {"freezer": [{"slot": "freeze-30ms-r0", "cgroup": "v1", "key_held": False,
                         "freeze_write_ms": 3.2, "thaw_write_ms": 3.1}]}
    run = run_with(tmp_path, {"freeze-30ms-r0.csv": [row(i, 30, 33.4) for i in range(9)],
                              "freeze-30ms-r1.csv": [row(i, 30, 33.6) for i in range(9)]}, meta)
    (w,) = freeze_lengths.warnings(run)
    assert w.startswith("The freezes of freeze-30ms ran long: they held the vCPU a median 33.50 ms, "
                        "not the 30.00 ms planned, over 18 freezes (the freezer's thaw write took 3.10 ms")
    # the verdict's warnings carry it into the report and summary.json
    assert w in verdict.warnings(types.SimpleNamespace(path=run.path, meta=run.meta), {}, None)


def test_the_bar_is_a_millisecond_or_five_percent(tmp_path):
    assert not freeze_lengths.ran_long({"planned_ms": 30.0, "applied_ms": 31.0})
    assert freeze_lengths.ran_long({"planned_ms": 30.0, "applied_ms": 31.6})
    assert not freeze_lengths.ran_long({"planned_ms": 100.0, "applied_ms": 104.9})
    assert freeze_lengths.ran_long({"planned_ms": 100.0, "applied_ms": 105.1})


def test_records_from_before_the_thaw_stamp_are_not_judged(tmp_path):
    old_header = HEADER.replace("thawed_tsc,", "").replace("thawed_ns,", "")
    run = run_with(tmp_path, {"freeze-30ms-r0.csv": [row(i, 30, 40, old=True) for i in range(5)]},
                   header=old_header)
    lengths = freeze_lengths.phase_lengths(run.path)["freeze-30ms"]
    assert lengths["freezes"] == 5 and lengths["applied_ms"] is None
    assert freeze_lengths.warnings(run) == []


def test_a_broken_record_is_named_and_loses_nothing_before_it(tmp_path):
    rows = [row(i, 30, 34) for i in range(4)] + ["1,2,3"]
    run = run_with(tmp_path, {"freeze-30ms-r0.csv": rows})
    lengths = freeze_lengths.phase_lengths(run.path)["freeze-30ms"]
    assert lengths["freezes"] == 4
    ws = freeze_lengths.warnings(run)
    assert ws[0] == ("The freeze record freezes/freeze-30ms-r0.csv line 6 has 3 fields, the header 22: "
                     "its freezes are left out of the length check.")
    assert "ran long" in ws[1]


def test_no_freeze_phase_no_warning(tmp_path):
    assert freeze_lengths.warnings(types.SimpleNamespace(path=str(tmp_path), meta=Meta.from_json({}))) == []


def test_old_results_preempt_folder_and_phase_are_read_alike(tmp_path):
    """Results from before issue 53: the records in preempt/, the phase preempt-<N>ms (old names)."""
    meta = {"freezer": [{"slot": "preempt-30ms-r0", "thaw_write_ms": 3.1}]}
    run = run_with(tmp_path, {"preempt-30ms-r0.csv": [row(i, 30, 33.4) for i in range(9)]}, meta,
                   folder="preempt")
    lengths = freeze_lengths.phase_lengths(run.path)
    assert list(lengths) == ["preempt-30ms"] and lengths["preempt-30ms"]["freezes"] == 9
    (w,) = freeze_lengths.warnings(run)
    assert w.startswith("The freezes of preempt-30ms ran long: they held the vCPU a median 33.40 ms, "
                        "not the 30.00 ms planned, over 9 freezes (the freezer's thaw write took 3.10 ms")
    (tmp_path / "preempt" / "preempt-30ms-r1.csv").write_text("1,2\n1,2,3\n")
    assert "The freeze record preempt/preempt-30ms-r1.csv line 2 has 3 fields" in freeze_lengths.warnings(run)[0]


def test_freeze_phase_names_new_and_old():
    assert freeze_lengths.freeze_ms("freeze-30ms") == 30
    assert freeze_lengths.freeze_ms("preempt-10ms") == 10  # its old name
    for other in ("idle-host", "host-load", "throttle-50%", "neighbours-1", "freeze-ms", "freeze-30ms-r1",
                  "xfreeze-30ms"):
        assert freeze_lengths.freeze_ms(other) is None, other


def test_record_path_finds_the_new_folder_then_the_old(tmp_path):
    assert freeze_lengths.record_path(str(tmp_path), "freeze-30ms", 1) is None
    run_with(tmp_path, {"preempt-30ms-r1.csv": [row(0, 30, 30)]}, folder="preempt")
    old = freeze_lengths.record_path(str(tmp_path), "preempt-30ms", 1)
    assert old == str(tmp_path / "preempt" / "preempt-30ms-r1.csv")
    assert freeze_lengths.record_path(str(tmp_path), "preempt-30ms", 2) is None
    run_with(tmp_path, {"freeze-30ms-r1.csv": [row(0, 30, 30)]})
    new = freeze_lengths.record_path(str(tmp_path), "freeze-30ms", 1)
    assert new == str(tmp_path / "freezes" / "freeze-30ms-r1.csv")


def test_the_header_is_the_writers():
    """HEADER above is freeze_record_header()'s text (the one writer of the record)."""
    import pathlib
    import re
    src = (pathlib.Path(__file__).resolve().parents[2] / "hypervisor-hooks/freezes/freeze_record.cc").read_text()
    body = src[src.index("std::string freeze_record_header()"):]
    body = body[:body.index(";")]
    assert "".join(re.findall(r'"([^"]*)"', body)).rstrip("\\n") == HEADER
