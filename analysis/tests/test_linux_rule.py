"""A Linux guest's long waits carry no holder (meta.json "guest": "linux"); the report names it
by rule (lhp.holder_rule). run-basic's waits all had the other vCPU as their holder, so at 2
vCPUs the rule must give exactly the classes the recorded holders gave; at 3 vCPUs it only
bounds the spin behind a preempted holder, and says so."""
import csv
import json

from conftest import BASIC

from spinlab_report import reader, summary, verdict, verdict_text
from spinlab_report.names import LHP_CLASS as L


def _as_linux(run_copy, vcpus=2):
    meta = json.loads((run_copy / "meta.json").read_text())
    (run_copy / "meta.json").write_text(json.dumps(dict(meta, guest="linux", vcpus=vcpus)))
    for path in sorted((run_copy / "snapshots").glob("*.json")):
        d = json.loads(path.read_text())
        for w in d.get("long_waits") or []:
            w["holder_cpu"] = w["holder_end_cpu"] = None
        path.write_text(json.dumps(d))


def _classes(path):
    run = reader.load_run(str(path))
    s = summary.build(run, summary.Options())
    return run, s, {ph: {k: p["lhp"][k] for k in ("holder_off", "holder_on", "uncertain", "unknown")}
                    for ph, p in s["phases"].items()}


def test_at_2_vcpus_the_rule_gives_the_recorded_holders_classes(run_copy):
    _, _, want = _classes(BASIC)
    _as_linux(run_copy)
    run, s, got = _classes(run_copy)
    assert run.holder_rule == "other-vcpu"
    assert got == want and want["host-load"]["holder_off"] > 0
    v = verdict.build(run, s)
    assert any("the holder is the other vCPU" in w for w in v["warnings"])
    c = v["phases"]["host-load"]["causes"]
    assert c["slow_holder"] == c["queued"] == 0 and c["holder_not_known"] == c[L.kNeither]  # the holds are not seen


def test_at_3_vcpus_the_spin_is_only_bounded_and_said_so(run_copy):
    base_run = reader.load_run(BASIC)
    base = verdict.build(base_run, summary.build(base_run, summary.Options()))["phases"]["host-load"]["lhp_spin"]
    _as_linux(run_copy, vcpus=3)
    # vCPU 2 as a copy of vCPU 1 in the host's timeline: a wait on CPU 0 has the possible holders
    # 1 and 2, off together
    path = run_copy / "timeline.csv"
    rows = list(csv.DictReader(path.open()))
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows + [dict(r, vcpu="2") for r in rows if r["vcpu"] == "1"])
    run = reader.load_run(str(run_copy))
    assert run.holder_rule == "any-other-vcpu"
    s = summary.build(run, summary.Options())
    lhp_ = s["phases"]["host-load"]["lhp"]
    assert lhp_["holder_off"] == 0 and lhp_["possibly_preempted"] > 0  # never "preempted": only possibly
    v = verdict.build(run, s)
    spin = v["phases"]["host-load"]["lhp_spin"]
    assert spin["cycles_per_vcpu_second"]["mean"] is None  # unknown, never 0
    # per vCPU-second: 3 vCPUs now, 2 in the base; the bound covers at least the recorded holders' spin
    assert spin["at_most_cycles_per_vcpu_second"]["mean"] * 3 >= base["cycles_per_vcpu_second"]["mean"] * 2
    lead = verdict_text.headlines(v)
    assert any(line.startswith("host-load: the spin behind a preempted holder is not known, at most") for line in lead), lead
