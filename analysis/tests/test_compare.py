"""--compare lays runs side by side with a table of differences relative to the first run."""
import csv
import json
import re
import subprocess

from conftest import BASIC, TOOL


def test_compare_two_runs(run_copy, tmp_path):
    meta = json.load(open(run_copy / "meta.json"))
    meta.update(run_id="run-ticket", lock="ticket")
    json.dump(meta, open(run_copy / "meta.json", "w"))
    for rep, ops in ((1, 750.0), (2, 900.0)):  # host-load throughput: mean 825 vs 550 (+50%)
        path = run_copy / "snapshots" / f"host-load-r{rep}.json"
        d = json.load(open(path))
        d["workload"]["lockbench"]["ops_per_s"] = ops
        json.dump(d, open(path, "w"))
    out = tmp_path / "cmp"
    p = subprocess.run(["/usr/bin/python3", TOOL, "--compare", BASIC, str(run_copy), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("report.html")
    rows = {(r["phase"], r["metric"]): r for r in csv.DictReader(open(out / "differences.csv"))}
    tp = rows[("host-load", "throughput")]
    assert float(tp["run-basic"]) == 550.0 and float(tp["run-ticket"]) == 825.0
    assert float(tp["change_pct_run-ticket_vs_run-basic"]) == 50.0
    assert float(rows[("idle-host", "contended_share")]["change_pct_run-ticket_vs_run-basic"]) == 0.0
    md = open(out / "report.md").read()
    assert "| lock algorithm | tas | ticket |" in md
    assert "| host-load | lockbench ops/s | 550.0 | 825.0 | +50.0% |" in md
    html = open(out / "report.html").read()
    assert len(re.findall(r'src="data:image/png;base64,', html)) == 3
    assert html.index('id="compare_wait_ccdf"') < html.index("What differs between the runs")
    # the verdict table: one row per run (each has one phase besides its baseline)
    assert "| run-basic | host-load | 2 | 4.12 M (0 … 12.1 M); ×16.6 (2.68 … 102), p = 0.032, significant |" in md
    assert "| run-ticket | host-load | 2 | 4.12 M (0 … 12.1 M);" in md and "+50.0%" not in md.split("## What differs")[0]
    assert json.load(open(out / "summary.json"))["runs"] == ["run-basic", "run-ticket"]


def test_compare_needs_two_runs():
    p = subprocess.run(["/usr/bin/python3", TOOL, "--compare", BASIC], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "at least two results directories" in p.stderr
