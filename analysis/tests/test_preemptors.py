"""The spin behind a preempted holder shared out by preemptor class (preemptors.py), on run-basic
(its holder-off long waits in host-load: 12,501,000 cycles of the holders' off time, 5,000,000 of
them frozen) with timeline.csv's preemptor column written in, left out, and malformed."""
import pytest

from spinlab_report import contract, reader, preemptors, summary, verdict_text


def _with_column(run_copy, classes):
    """timeline.csv with the preemptor columns: classes(row fields) gives an off row's class."""
    path = run_copy / "timeline.csv"
    lines = [",".join(line.split(",")[:7]) for line in path.read_text().splitlines()]  # the contract's 7
    out = [lines[0] + ",preemptor,preemptor_vm,preemptor_vcpu,preemptor_pid,preemptor_comm"]
    for line in lines[1:]:
        f = line.split(",")
        cls = "" if f[2] == "on" else "freeze" if f[2] == "frozen" else classes(f)
        out.append(line + f",{cls},,,{'' if not cls else 4321},{'' if not cls else 'spinlab-hog'}")
    path.write_text("\n".join(out) + "\n")


def _host_load(run_copy):
    return summary.build(reader.load_run(str(run_copy)), summary.Options())["phases"]["host-load"]["preemptors"]


def test_old_timeline_without_the_column_is_unknown_and_says_so(run_copy):
    p = _host_load(run_copy)
    assert p["column"] is False
    assert (p["waits"], p["waits_not_placed"]) == (3, 0)
    assert p["off_cycles"] == {"unknown": 7_501_000, "own-vcpu": 0, "neighbour-vcpu": 0, "hog": 0,
                               "freeze": 5_000_000, "host-task": 0, "blocked": 0}
    assert "no preemptor column" in preemptors.sentence(p)


def test_every_off_row_a_hog_makes_the_unknown_part_hog(run_copy):
    _with_column(run_copy, lambda f: "hog")
    p = _host_load(run_copy)
    assert p["column"] is True
    assert p["off_cycles"]["hog"] == 7_501_000 and p["off_cycles"]["unknown"] == 0
    assert p["share"]["hog"] == pytest.approx(7_501_000 / 12_501_000, abs=1e-6)
    assert p["share"]["freeze"] == pytest.approx(5_000_000 / 12_501_000, abs=1e-6)
    s = verdict_text.preemptor_sentence(p)
    assert "hog 60 %, freeze 40 %" in s and "no preemptor column" not in s


def test_each_row_counts_for_its_own_class(run_copy):
    # vCPU 1's off rows of host-load r1, each its own class: the holder-off waits cover the first
    # (5,000,000 cycles) whole and 2,501,000 cycles of the second; the third and r2's none.
    by_start = {"3100001000": "own-vcpu", "3302000000": "host-task", "3495000000": "hog"}
    _with_column(run_copy, lambda f: by_start.get(f[3], "neighbour-vcpu"))
    p = _host_load(run_copy)
    assert p["off_cycles"] == {"unknown": 0, "own-vcpu": 5_000_000, "neighbour-vcpu": 0, "hog": 0,
                               "freeze": 5_000_000, "host-task": 2_501_000, "blocked": 0}
    # an empty class on an off row is unknown
    _with_column(run_copy, lambda f: "" if f[3] == "3100001000" else "hog")
    assert _host_load(run_copy)["off_cycles"]["unknown"] == 5_000_000


def test_a_holder_that_blocked_is_said_apart_with_no_preemptor(run_copy):
    # The first off row's holder slept (class blocked): no task took its CPU. The wait it covers
    # (its holder off only while blocked) is holder_blocked, not behind a preempted holder: it
    # leaves the holder-off waits, their preemptors and the spin they share out.
    before = summary.build(reader.load_run(str(run_copy)), summary.Options())["phases"]["host-load"]["lhp"]
    _with_column(run_copy, lambda f: "blocked" if f[3] == "3100001000" else "hog")
    s_ = summary.build(reader.load_run(str(run_copy)), summary.Options())["phases"]["host-load"]
    lhp_, p = s_["lhp"], s_["preemptors"]
    assert (lhp_["holder_off"], lhp_["holder_blocked"]) == (before["holder_off"] - 1, 1)
    assert lhp_["off_cycles"]["holder"]["blocked"] == pytest.approx(5_000_000, rel=1e-4)  # middles of ranges
    assert lhp_["off_cycles"]["holder"]["off"] == before["off_cycles"]["holder"]["off"]
    assert p["off_cycles"]["blocked"] == 0 and p["off_cycles"]["hog"] == 2_501_000
    s = verdict_text.preemptor_sentence(p)
    assert "went to: freeze 67 %, hog 33 % of its off time" in s, s
    # Every off row blocked: only the frozen holder is behind a preempted holder.
    _with_column(run_copy, lambda f: "blocked")
    s_ = summary.build(reader.load_run(str(run_copy)), summary.Options())["phases"]["host-load"]
    assert s_["lhp"]["holder_blocked"] == 2 and s_["preemptors"]["off_cycles"]["blocked"] == 0
    assert "went to: freeze 100 %" in verdict_text.preemptor_sentence(s_["preemptors"])


def test_a_class_not_in_the_abi_table_is_a_contract_error(run_copy):
    _with_column(run_copy, lambda f: "hogg")
    with pytest.raises(contract.ContractError, match="unknown preemptor class.*hogg"):
        reader.read_timeline(str(run_copy / "timeline.csv"))


def _window_caption(run_copy, tmp_path):
    from spinlab_report import attribution, fig_long_wait_window
    run = reader.load_run(str(run_copy))
    f = fig_long_wait_window.make(run, attribution.attribute_run(run, 1 << 20), str(tmp_path / "fig"))
    assert f.missing is None and f.png
    return f.caption


def _window_counts(caption):
    """{class: off-intervals} from the caption's "intervals in the window: a 1, b 2)"."""
    listed = caption.split("intervals in the window: ")[1].split(")")[0]
    return {} if listed == "none" else {c: int(n) for c, n in (p.rsplit(" ", 1) for p in listed.split(", "))}


def test_the_long_wait_window_names_the_preemptor_of_each_off_interval(run_copy, tmp_path):
    # without the column, the window shows off and frozen only and names no preemptor
    assert "preemptor" not in _window_caption(run_copy, tmp_path)
    # run-basic's busiest window (host-load r1) holds one off interval of vCPU 1, the one that
    # starts at host TSC 3100001000: each class given to it is the one named
    for cls in ("own-vcpu", "hog", "neighbour-vcpu"):
        _with_column(run_copy, lambda f: cls if f[3] == "3100001000" else "host-task")
        caption = _window_caption(run_copy, tmp_path)
        assert "coloured by the task that took the vCPU's host CPU" in caption
        assert _window_counts(caption) == {cls: 1}, caption


def test_a_tcg_run_whose_waits_lean_on_qemus_locks_is_warned(run_copy):
    """Under TCG, a phase whose long waits' off time was mostly blocked inside QEMU gets the
    verdict's warning; the same timeline from a KVM run (meta.json's accelerator) does not, nor a
    TCG run whose off rows were preempted."""
    import json
    from spinlab_report import verdict
    meta = json.loads((run_copy / "meta.json").read_text())

    def warnings(accel):
        (run_copy / "meta.json").write_text(json.dumps(dict(meta, accelerator=accel)))
        run = reader.load_run(str(run_copy))
        return [w for w in verdict.build(run, summary.build(run, summary.Options()))["warnings"]
                if "lean on QEMU's own locks" in w]
    _with_column(run_copy, lambda f: "blocked")
    got = warnings("tcg")
    assert len(got) == 1 and "host-load (" in got[0] and "of the holders" in got[0], got
    assert warnings("kvm") == []
    _with_column(run_copy, lambda f: "hog")
    assert warnings("tcg") == []
