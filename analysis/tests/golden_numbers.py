"""The report's numbers on the test data, as one JSON-able object, for the golden test
(test_golden_numbers.py) and for recording its expected file.

Contract: numbers(case) returns every number the report shows or derives for one case of the
test data (tests/data/run-basic, and variants of it built here): summary.json with the verdict,
table.txt and table.csv, report.md (every table and sentence of the report), each phase's
attributed long waits as attribution.long_waits_share lists them, and the data the two long-wait figures
draw (fig_holder_off.points, fig_long_wait_window.pick); report.md is compared for one case
(FULL_REPORT), the file holds it for every case. The expected file was written from the
report before the analysis was vectorized (issue 28), so the golden test shows the numpy version
gives the same numbers as the per-wait Python one did.

How they are compared (compare()): counts and text exactly, floats within a stated tolerance.
numpy picks SIMD code paths by the CPU it runs on (AVX2, AVX-512, ...), and a different summation
order changes a float's last digits (102.49688549868398 against 102.49688549868334 on an EPYC with
AVX-512), so a JSON float matches within REL_TOL = 1e-9 relative (ABS_TOL = 1e-15 absolute for a
value that is 0 on one path and rounding noise on the other); a JSON int must be an int and equal.
In the rendered text (table.txt, table.csv, report.md) everything but the numbers must be equal
character for character; a number with a decimal point or an exponent was rendered from a float and
matches within REL_TOL or one unit of its last shown digit (a value within 1e-9 of a rounding
boundary may round either way); a number of digits alone is compared exactly (it may be a count).
The golden test runs the report twice in a subprocess: with every CPU feature numpy may dispatch
to, and with those this CPU has switched off (NPY_DISABLE_CPU_FEATURES), so both paths are judged.

    /usr/bin/python3 tests/golden_numbers.py --write   # (re)records data/expected/golden-numbers.json
    /usr/bin/python3 tests/golden_numbers.py --print CASE...   # the numbers as JSON, and numpy's features
"""
import json
import math
import os
import re
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
    from spinlab_report import aggregate, attribution, fig_holder_off, fig_long_wait_window, reader, report, summary, table, verdict
    from spinlab_report.fig_wait_ccdf import tsc_hz
    threshold = CASES[case]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run-basic")
        shutil.copytree(BASIC, run_dir)
        if case == "basic-holds":
            add_holds(run_dir)
        run = reader.load_run(run_dir)
        opts = summary.Options(long_wait_threshold=threshold)
        out = {}
        if full or case == FULL_REPORT:  # the whole report, figures drawn, for report.md
            paths = report.generate(run, os.path.join(tmp, "out"), opts)
            for key in ("summary", "table", "csv", "md"):
                text = open(paths[key], encoding="utf-8").read()
                out[key] = json.loads(text) if key == "summary" else text
        else:  # what report.generate writes before the figures: the numbers without report.md
            counters = aggregate.counters(run)
            summ = summary.build(run, opts)
            summ["verdict"] = verdict.build(run, summ)
            out["summary"] = _roundtrip(summ)
            out["table"], out["csv"] = table.table_text(counters.totals, counters.repetitions), table.table_csv(counters.totals)
        run = reader.load_run(run_dir)  # afresh: nothing cached from the report
        out["waits"] = {p: _roundtrip(list(attribution.long_waits_share(run.snaps(p), run.timeline, run.clock, threshold)["waits"]))
                        for p in run.phases}
        att = attribution.attribute_run(run, threshold)
        pts, missing, given = fig_holder_off.points(run, att)
        rows = list(zip(*(pts[k].tolist() for k in ("phase", "wait", "fraction", "cause", "least", "most"))))
        out["holder_off_points"] = _roundtrip([rows, missing, given])
        hz = tsc_hz(run.meta)
        out["long_wait_window"] = _roundtrip(fig_long_wait_window.pick(run, att, fig_long_wait_window.WINDOW_S * hz))
    return out


def all_numbers() -> dict:
    return {case: numbers(case, full=True) for case in CASES}


REL_TOL = 1e-9  # a float's relative tolerance (see the module's docstring)
ABS_TOL = 1e-15  # below the smallest non-zero golden float (5e-07) times 1e-6
# A number standing alone in rendered text: not part of a word, a version (6.1.0) or a hex value.
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def _float_ok(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _last_unit(token: str) -> float:
    """One unit of the last digit shown: 0.0001 for "8.0000", 0.01 for "1.25e+06" times 1e6."""
    mant, _, exp = token.lower().partition("e")
    decimals = len(mant.partition(".")[2])
    return 10.0 ** (int(exp or 0) - decimals)


def _text_diffs(path: str, a: str, b: str, out: list):
    """Rendered text: equal but for floats rendered within tolerance (the module's docstring)."""
    ta, tb = _NUMBER.split(a), _NUMBER.split(b)
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    if ta != tb or len(na) != len(nb):  # text differs (or a number became a word)
        line = next((i for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())) if x != y), None)
        where = (f" line {line + 1}: expected {a.splitlines()[line]!r:.200}, got {b.splitlines()[line]!r:.200}"
                 if line is not None else f": expected {len(a)} characters, got {len(b)}")
        out.append(f"{path}: the text differs{where}")
        return
    for i, (x, y) in enumerate(zip(na, nb)):
        if x == y:
            continue
        floaty = any(c in x + y for c in ".eE")
        ok = floaty and (_float_ok(float(x), float(y))
                         or abs(float(x) - float(y)) <= max(_last_unit(x), _last_unit(y)) * (1 + 1e-9))
        if not ok:
            line = a.count("\n", 0, sum(len(t) for t in ta[:i + 1]) + sum(len(n) for n in na[:i])) + 1
            kind = "float" if floaty else "integer (compared exactly)"
            out.append(f"{path} line {line}: {kind} {x!r} became {y!r}")


def compare(path: str, a, b, out: list) -> list:
    """The differences of golden value `a` and computed value `b` (JSON values), as readable lines
    appended to out: dicts key by key, lists item by item, ints exactly (an int must stay an int),
    floats within REL_TOL, strings as rendered text (_text_diffs), anything else exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing' if k not in b else 'not expected'}")
            else:
                compare(f"{path}.{k}", a[k], b[k], out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: expected {len(a)} items, got {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            compare(f"{path}[{i}]", x, y, out)
    elif isinstance(a, float) and isinstance(b, float):
        if not _float_ok(a, b):
            out.append(f"{path}: expected {a!r}, got {b!r} (relative difference "
                       f"{abs(a - b) / max(abs(a), abs(b)):.3g}, tolerance {REL_TOL:g})")
    elif isinstance(a, str) and isinstance(b, str):
        _text_diffs(path, a, b, out)
    elif type(a) is not type(b) or a != b:  # an int against a float is a difference, as is True against 1
        out.append(f"{path}: expected {a!r:.200} ({type(a).__name__}), got {b!r:.200} ({type(b).__name__})")
    return out


def cpu_features() -> dict:
    """numpy's view of this CPU: the features it found, those it may dispatch to at run time."""
    try:
        from numpy._core import _multiarray_umath as mu  # numpy 2
    except ImportError:
        from numpy.core import _multiarray_umath as mu
    return {"found": sorted(k for k, v in mu.__cpu_features__.items() if v),
            "dispatch": list(mu.__cpu_dispatch__), "baseline": list(mu.__cpu_baseline__)}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--print"] and sys.argv[2:]:
        json.dump({"cpu": cpu_features(), "numbers": {c: numbers(c) for c in sys.argv[2:]}}, sys.stdout)
    elif sys.argv[1:] == ["--write"]:
        with open(EXPECTED, "w") as f:
            json.dump(all_numbers(), f, indent=1, sort_keys=True)
            f.write("\n")
        print(EXPECTED)
    else:
        sys.exit("usage: golden_numbers.py --write   (records " + EXPECTED + ")\n"
                 "       golden_numbers.py --print CASE...   (the numbers and numpy's CPU features as JSON)")
