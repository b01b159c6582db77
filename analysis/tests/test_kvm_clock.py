"""KVM's TSC offset as the clock (kvm_clock.py): taken when every repetition's samples read it, the
same on every vCPU all run, ratio 1, and the sampled fit's brackets allow it; then guest times map
onto the host's axis exactly (bound 0). Refuted by the fit, changed during the run, differing
between vCPUs, scaled or unread: the fit stays the clock and the report says why.

run-basic's clock.json: two points at host - guest 1000 cycles, half width 20 (no noise floor),
so causality allows any host - guest offset up to 1020 (tsc_offset >= -1020)."""
import json
import os
import shutil

import numpy as np

import spinlab_report

from spinlab_report import lhp, reader, summary
from spinlab_report import report as report_mod

PHASES = ("idle-host", "host-load")


def _tsc(offsets, ratio=1.0):
    return {"vcpus": [{"vcpu": i, "tsc_offset": o, "tsc_scaling_ratio": ratio, "scaling_stated": ratio != 1.0}
                      for i, o in enumerate(offsets)]}


def _with_samples(run_copy, tsc_of=lambda phase, rep, when: _tsc([-1000, -1000])):
    """run-basic with a KVM statistics sample at each repetition's start and end, "tsc" as given
    (None: a sample from before the offset was kept)."""
    os.makedirs(run_copy / "kvm-stats", exist_ok=True)
    for phase in PHASES:
        for rep in (1, 2):
            for when in ("start", "end"):
                d = {"format": 1, "vm": "m", "accel": "kvm", "backend": "qemu", "monotonic_ns": 1, "unix": 1.0,
                     "vcpus": [{"vcpu": 0, "stats": {"exits": 1}}, {"vcpu": 1, "stats": {"exits": 1}}]}
                t = tsc_of(phase, rep, when)
                if t is not None:
                    d["tsc"] = t
                (run_copy / "kvm-stats" / f"{phase}-r{rep}-{when}.json").write_text(json.dumps(d))
    return reader.load_run(str(run_copy))


def test_an_offset_the_fit_allows_is_the_clock_with_bound_zero(run_copy):
    run = _with_samples(run_copy)
    assert run.problems == []
    assert run.clock["method"] == "kvm-tsc-offset" and run.clock["offset_cycles"] == 1000
    assert run.clock_fit["method"] == "bracket-envelope"  # clock.json's fit is kept beside it
    host, bound = lhp.host_map(lhp.ClockMap(run.clock), np.array([5.0, 20e9]))
    assert list(host) == [1005.0, 20e9 + 1000] and list(bound) == [0.0, 0.0]  # also outside the sampled span
    k = run.kvm_clock
    assert k["source"] == "kvm-tsc-offset" and k["tsc_offset"] == -1000 and k["vcpus"] == 2
    assert k["samples_read"] == 8 and k["upper_cycles"] == 1020 and k["margin_cycles"] == 20


def test_the_long_waits_are_placed_with_kvms_offset(run_copy, tmp_path):
    fit_only = summary.build(reader.load_run(str(run_copy)), summary.Options())
    run = _with_samples(run_copy)
    s = summary.build(run, summary.Options())
    assert s["clock"]["source"] == "kvm-tsc-offset" and s["clock"]["bound_max_cycles"] == 0.0
    assert fit_only["clock"]["source"] == "sampled-fit" and fit_only["clock"]["kvm_tsc"] is None
    assert s["phases"]["host-load"]["lhp"]["long_waits"] == fit_only["phases"]["host-load"]["lhp"]["long_waits"]
    # each wait is placed with the offset's bound (0), not the fit's (20 cycles and up)
    placed = spinlab_report.long_waits_share(run.snaps("host-load"), run.timeline, run.clock, 2 ** 20)["waits"]
    fitted = spinlab_report.long_waits_share(run.snaps("host-load"), run.timeline, run.clock_fit, 2 ** 20)["waits"]
    assert len(placed) == len(fitted) == 7
    assert [w["bound_cycles"] for w in placed] == [0.0] * 7 and min(w["bound_cycles"] for w in fitted) >= 20
    paths = report_mod.generate(run, str(tmp_path / "out"), summary.Options())
    md = open(paths["md"]).read()
    assert "Clock: KVM's TSC offset (-1000 cycles, the same on 2 vCPUs in all 8 reads" in md
    assert "exactly (bound 0)" in md


def test_an_offset_the_brackets_refute_leaves_the_fit(run_copy, tmp_path):
    run = _with_samples(run_copy, lambda p, r, w: _tsc([-1030, -1030]))
    assert run.clock["method"] == "bracket-envelope"
    assert "refuted by the sampled clock: host - guest 1030 cycles lies above 1020" in run.kvm_clock["why"]
    paths = report_mod.generate(run, str(tmp_path / "out"), summary.Options())
    assert "KVM's TSC offset was not taken: KVM's offset is refuted" in open(paths["md"]).read()


def test_an_offset_that_moves_differs_or_is_scaled_or_unread_leaves_the_fit(run_copy, tmp_path):
    cases = [
        (lambda p, r, w: _tsc([-1000, -1000] if (p, r, w) != ("host-load", 2, "end") else [-1000, -999]),
         "vCPU 1's TSC offset or ratio changed during the run"),
        (lambda p, r, w: _tsc([-1000, -990]), "the vCPUs' TSC offsets differ"),
        (lambda p, r, w: _tsc([-1000, -1000], 0.5), "KVM scales this guest's TSC (ratio 0.5)"),
        (lambda p, r, w: {"vcpus": [], "unavailable": "/sys/kernel/debug/kvm is not there"},
         "KVM's TSC offset was not read: /sys/kernel/debug/kvm is not there"),
        (lambda p, r, w: None, "written before it was kept"),
    ]
    for i, (tsc_of, why) in enumerate(cases):
        d = tmp_path / f"case{i}"
        shutil.copytree(run_copy, d)
        run = _with_samples(d, tsc_of)
        assert run.problems == [], run.problems
        assert run.clock["method"] == "bracket-envelope", why
        assert why in run.kvm_clock["why"], (why, run.kvm_clock)
        assert run.kvm_clock["source"] == "sampled-fit"


def test_a_bad_tsc_entry_is_a_named_problem(run_copy):
    run = _with_samples(run_copy, lambda p, r, w: {"vcpus": [{"vcpu": 0, "tsc_offset": "0", "tsc_scaling_ratio": 1}]}
                        if (p, r, w) == ("idle-host", 1, "start") else _tsc([-1000, -1000]))
    assert any("kvm-stats/idle-host-r1-start.json tsc: field 'tsc_offset' must be int" in p for p in run.problems), \
        run.problems
    assert run.clock["method"] == "bracket-envelope"  # a repetition without its samples: the fit stays
    assert "kvm-stats/idle-host-r1-start.json is missing" in run.kvm_clock["why"]
