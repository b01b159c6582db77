"""KVM's per-vCPU counters (kvm-stats/<phase>-r<rep>-start|end.json, spinlab-vm stats' samples):
what each counter moved per second of the windows, per phase and vCPU, beside the timeline's off
intervals; a counter 0 since boot everywhere is "not shown to be kept", never a row of zeros; a
bad file is a named problem and the rest of the run is still read."""
import json
import os

from spinlab_report import kvm_stats, reader, summary
from spinlab_report import report as report_mod


def _sample(t_s, per_vcpu):
    return {"format": 1, "vm": "m", "accel": "kvm", "backend": "qemu", "monotonic_ns": int(t_s * 1e9),
            "unix": 1.0, "vcpus": [{"vcpu": i, "stats": st} for i, st in enumerate(per_vcpu)]}


def _write(run_copy, name, d):
    os.makedirs(run_copy / "kvm-stats", exist_ok=True)
    (run_copy / "kvm-stats" / name).write_text(json.dumps(d))


def _with_stats(run_copy):
    """run-basic with samples: exits move 100 (vCPU 0) and 300 (vCPU 1) per 2 s window in
    host-load, 10 and 10 in idle-host; preemption_other moves only in host-load; hypercalls and
    preemption_reported stay 0 since boot; halt_exits is not offered."""
    t = 10.0
    base = [{"exits": 1000, "preemption_other": 5, "hypercalls": 0, "preemption_reported": 0},
            {"exits": 2000, "preemption_other": 7, "hypercalls": 0, "preemption_reported": 0}]
    for phase, (d0, d1, p) in (("idle-host", (10, 10, 0)), ("host-load", (100, 300, 4))):
        for rep in (1, 2):
            _write(run_copy, f"{phase}-r{rep}-start.json", _sample(t, base))
            base = [dict(base[0], exits=base[0]["exits"] + d0, preemption_other=base[0]["preemption_other"] + p),
                    dict(base[1], exits=base[1]["exits"] + d1, preemption_other=base[1]["preemption_other"] + p)]
            t += 2.0
            _write(run_copy, f"{phase}-r{rep}-end.json", _sample(t, base))
            t += 5.0
    return reader.load_run(str(run_copy))


def test_each_phase_shows_what_moved_per_second_beside_the_timeline(run_copy):
    run = _with_stats(run_copy)
    assert run.problems == []
    s = kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases)
    hl = {v["vcpu"]: v for v in s["phases"]["host-load"]["vcpus"]}
    assert s["phases"]["host-load"]["repetitions"] == 2 and abs(s["phases"]["host-load"]["seconds"] - 4.0) < 1e-9
    assert hl[0]["moved"]["exits"] == 200 and hl[1]["moved"]["exits"] == 600
    assert abs(hl[1]["per_s"]["exits"] - 150.0) < 1e-9 and abs(hl[0]["per_s"]["preemption_other"] - 2.0) < 1e-9
    # run-basic's timeline: host-load vCPU 0 off 1 + frozen 1, vCPU 1 off 3 + 1; idle-host none
    assert hl[0]["timeline_off_intervals"] == 2 and hl[1]["timeline_off_intervals"] == 4
    assert {v["vcpu"]: v["timeline_off_intervals"] for v in s["phases"]["idle-host"]["vcpus"]} == {0: 0, 1: 0}
    assert s["not_kept"] == ["hypercalls", "preemption_reported"]
    assert "halt_exits" in s["not_listed"]


def test_the_report_names_counters_never_kept_instead_of_showing_zeros(run_copy, tmp_path):
    run = _with_stats(run_copy)
    paths = report_mod.generate(run, str(tmp_path / "out"), summary.Options())
    summ = json.loads(open(paths["summary"]).read())
    assert summ["kvm_stats"]["not_kept"] == ["hypercalls", "preemption_reported"]
    blocks = kvm_stats.section(summ["kvm_stats"])
    (table,) = [b for b in blocks if b[0] == "table"]
    assert table[1] == ["phase", "vCPU", "exits/s", "preemption_other/s", "timeline off intervals"]
    assert ["host-load", "1", "150.0", "2.0", "4"] in table[2]
    text = " ".join(b[1] for b in blocks if b[0] == "p")
    assert "Not shown to be kept by this host's KVM: hypercalls, preemption_reported" in text
    md = open(paths["md"]).read()
    assert "KVM's per-vCPU counters" in md and md.index("## KVM's per-vCPU counters") < md.index("## The run")


def test_a_run_without_samples_has_no_section(run_copy):
    run = reader.load_run(str(run_copy))
    assert run.kvm_stats == {} and kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases) is None
    assert kvm_stats.section(None) == []


def test_unavailable_samples_say_why(run_copy):
    for when in ("start", "end"):
        _write(run_copy, f"idle-host-r1-{when}.json", {"format": 1, "vm": "m", "accel": "kvm", "vcpus": [],
                                                       "monotonic_ns": 1, "unavailable": "query-stats: no such command"})
    run = reader.load_run(str(run_copy))
    s = kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases)
    assert s["phases"] == {} and s["unavailable"] == ["query-stats: no such command"]
    assert kvm_stats.section(s)[1] == ("p", "Not recorded: query-stats: no such command.")


def test_bad_samples_are_named_problems_and_the_run_is_still_read(run_copy):
    run = _with_stats(run_copy)
    good = len(run.snapshots)
    _write(run_copy, "host-load-r1-end.json", _sample(12.0, [{"exits": -1}]))
    (run_copy / "kvm-stats" / "idle-host-r2-start.json").write_text("{not json")
    _write(run_copy, "stray.json", _sample(1.0, []))
    run = reader.load_run(str(run_copy))
    assert len(run.snapshots) == good
    problems = " | ".join(run.problems)
    assert "kvm-stats/host-load-r1-end.json: vCPU 0's counter 'exits' must be a count, got -1" in problems
    assert "idle-host-r2-start.json: not valid JSON" in problems
    assert "kvm-stats/stray.json: not a KVM statistics name" in problems
    s = kvm_stats.summarize(run.kvm_stats, run.timeline, run.phases)
    assert s["phases"]["host-load"]["repetitions"] == 1 and s["phases"]["idle-host"]["repetitions"] == 1
