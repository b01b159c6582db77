"""The report's numbers on the test data, as one JSON-able object, for the golden test
(test_golden_numbers.py) and for recording its expected file.

Contract: numbers(case) returns every number the report shows or derives for one case of the
test data (tests/data/run-basic, and variants of it built here): summary.json with the verdict,
table.txt and table.csv, report.md (every table and sentence of the report), each phase's
attributed long waits as waits.long_waits_share lists them, and the data the two long-wait figures
draw (fig_holder_off.points, fig_long_wait_window.pick); report.md is compared for one case
(FULL_REPORT), the file holds it for every case. The expected file was written from the
report before the analysis was vectorized (issue 28), so the golden test shows the numpy version
gives the same numbers as the per-wait Python one did.

    /usr/bin/python3 tests/golden_numbers.py --write   # (re)records data/expected/golden-numbers.json
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
BASIC = os.path.join(HERE, "data", "run-basic")
EXPECTED = os.path.join(HERE, "data", "expected", "golden-numbers.json")
CASES = {"basic": 2 ** 20, "basic-threshold-2^24": 2 ** 24, "basic-holds": 2 ** 20}
FULL_REPORT = "basic"  # the case whose report.md is compared (drawing the figures costs seconds)


def _roundtrip(x):
    """As JSON would store it (tuples become lists, keys strings); floats keep every bit."""
    return json.loads(json.dumps(x))


def add_holds(run_dir: str):
    """Hand-over chains on host-load r1's long waits: placed and unplaced hand-overs, so the
    holder is measured piece by piece and, where a moment is unknown, over every moment."""
    path = os.path.join(run_dir, "snapshots", "host-load-r1.json")
    d = json.load(open(path))
    lw = d["long_waits"]
    s0, s1, s2 = (lw[i]["start_tsc"] for i in range(3))
    lw[0]["holds"] = [[1, None], [0, s0 + 2_000_000]]
    lw[1]["holds"] = [[0, None], [1, None], [0, s1 + 4_000_000]]
    lw[2]["holds"] = [[1, None], [0, None], [1, None]]
    json.dump(d, open(path, "w"))


def numbers(case: str, full: bool = False) -> dict:
    """The numbers of one case; report.md (all figures drawn) only for FULL_REPORT unless full."""
    from spinlab_report import dense, fig_holder_off, fig_long_wait_window, lhp, reader, report, summary, table, verdict, waits
    from spinlab_report.fig_wait_ccdf import tsc_hz
    threshold = CASES[case]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run-basic")
        shutil.copytree(BASIC, run_dir)
        if case == "basic-holds":
            add_holds(run_dir)
        run = reader.load_run(run_dir)
        opts = summary.Options(threshold=threshold)
        out = {}
        if full or case == FULL_REPORT:  # the whole report, figures drawn, for report.md
            paths = report.generate(run, os.path.join(tmp, "out"), opts)
            for key in ("summary", "table", "csv", "md"):
                text = open(paths[key], encoding="utf-8").read()
                out[key] = json.loads(text) if key == "summary" else text
        else:  # what report.generate writes before the figures: the numbers without report.md
            totals, reps = report.phase_tables(run)
            summ = summary.build(run, opts)
            summ["verdict"] = verdict.build(run, summ)
            out["summary"] = _roundtrip(summ)
            out["table"], out["csv"] = table.table_text(totals, reps), table.table_csv(totals)
        run = reader.load_run(run_dir)  # afresh: nothing cached from the report
        out["waits"] = {p: _roundtrip(list(waits.long_waits_share(run.snaps(p), run.timeline, run.clock, threshold)["waits"]))
                        for p in run.phases}
        pts, missing, given = fig_holder_off.points(run, threshold)
        rows = list(zip(*(pts[k].tolist() for k in ("phase", "wait", "fraction", "lhp", "least", "most"))))
        out["holder_off_points"] = _roundtrip([rows, missing, given])
        hz = tsc_hz(run.meta)
        out["long_wait_window"] = _roundtrip(fig_long_wait_window.pick(run, threshold, fig_long_wait_window.WINDOW_S * hz))
        dense.release(run)
    return out


def all_numbers() -> dict:
    return {case: numbers(case, full=True) for case in CASES}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: golden_numbers.py --write   (records " + EXPECTED + ")")
    with open(EXPECTED, "w") as f:
        json.dump(all_numbers(), f, indent=1, sort_keys=True)
        f.write("\n")
    print(EXPECTED)
