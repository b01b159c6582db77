"""results/index.html: every run, its state and verdict, links to the reports that exist."""
import html
import json
import os
import shutil
import subprocess

from conftest import BASIC, TOOL
from spinlab_report import index


def make_results(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for name in ("20260101-100000", "20260102-100000"):
        shutil.copytree(BASIC, results / name)
    meta = json.loads((results / "20260102-100000" / "meta.json").read_text())
    meta["date"] = "2026-01-02T10:00:00Z"
    (results / "20260102-100000" / "meta.json").write_text(json.dumps(meta))
    (results / "20260102-100000" / "spec.ini").write_text(
        "# the spec as run by spinlab-run (from /usr/local/share/spinlab/experiments/freeze.ini)\n")
    os.symlink("20260102-100000", results / "latest")
    (results / "not-a-run").mkdir()
    return results


def test_report_writes_the_index_with_a_link_per_reported_run(tmp_path):
    results = make_results(tmp_path)
    r = subprocess.run([TOOL, str(results / "latest")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(results / "latest" / "report.html")
    page = (results / "index.html").read_text()
    assert f"every run: {results / 'index.html'}" in r.stderr
    assert "<a href='20260102-100000/report.html'>20260102-100000</a>" in page
    # the other run has no report yet: listed, not linked
    assert "<tr><td>20260101-100000</td>" in page
    assert "no report yet" in page
    assert "not-a-run" not in page and ">latest<" not in page
    assert "<td>freeze</td>" in page
    # newest first, with the state and the verdict of its summary.json
    runs, compares = index.rows(str(results))
    assert [r["run"] for r in runs] == ["20260102-100000", "20260101-100000"]
    summary = json.loads((results / "latest" / "summary.json").read_text())
    assert runs[0]["state"] == summary["state"]
    assert runs[0]["verdict"] == index.verdict_line(summary)
    assert runs[0]["verdict"].startswith("host-load: spin behind preempted holders ")
    assert html.escape(runs[0]["verdict"]) in page
    assert compares == []


def test_verdict_line_names_each_phase_against_the_baseline():
    summary = {"verdict": {"baseline_phase": "idle-host", "confidence": 0.95, "long_k": 20, "phases": {
        "idle-host": {"status": "ok", "per_second": {"vs_baseline": None}},
        "host-load": {"status": "ok", "per_second": {"vs_baseline": {"ratio": 0.42, "p": 0.001}},
                      "lhp_spin": {"cycles_per_vcpu_second": {"vs_baseline": {"ratio": 11.3, "p": 0.002}}},
                      "kernel_spin": {"share": {"mean": 0.076}},
                      "lhp": {"share": 0.85}, "throughput": {"change_pct": -51.2}},
        "freeze-20ms": {"status": "ok", "per_second": {"vs_baseline": {"ratio": 1.5, "p": 0.4}},
                         "lhp": {"share": None}, "throughput": None},
        "throttle-50%": {"status": "missing"}}}}
    # the LHP headline first, waits >= 2^20 after it as secondary; a summary from before the
    # headline (freeze-20ms here) gives the secondary figures alone
    assert index.verdict_line(summary) == (
        "host-load: spin behind preempted holders 11.3\u00d7 idle-host (p = 0.002), kernel-lock spin 7.60% of vCPU "
        "time, holder preempted 85%; secondary: waits \u2265 2^20 0.420\u00d7 idle-host (p = 0.001), throughput -51%; "
        "freeze-20ms: waits \u2265 2^20 1.50\u00d7 idle-host (p = 0.400, not significant); throttle-50%: missing")
    assert index.verdict_line(None) == "no report yet"
    assert index.verdict_line({"phases": {}}) == "no verdict in summary.json"


def test_compare_report_is_listed(tmp_path):
    results = make_results(tmp_path)
    r = subprocess.run([TOOL, "--compare", str(results / "20260101-100000"),
                        str(results / "20260102-100000")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    page = (results / "index.html").read_text()
    assert "<h2>Comparisons</h2>" in page
    assert "<a href='compare-" in page and "/report.html'>compare-" in page


def test_spec_name_from_spec_ini_header():
    assert index.spec_name("# the spec as run by spinlab-run (from experiments/default.ini)\n") == "default"
    assert index.spec_name("# the spec as run by spinlab-run\n") == ""
    assert index.spec_name(None) == ""
