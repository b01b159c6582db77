"""The analysis at scale (64 vCPUs, 1M long waits; analysis/bench/README.md): the numpy interval
arithmetic agrees with the plain per-row sums it replaced, dense figures draw at most one mark per
pixel, the progress lines appear on a terminal only, and the benchmark's synthetic runs satisfy the
results contract."""
import ast
import io
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from spinlab_report import dense, fig_holder_off, reader, progress, trace_columns, trace_replay
from spinlab_report.contract import OFF_STATES, UNKNOWN_STATE

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "bench", "make_synthetic_run.py")
TRACE_SCRIPT = os.path.join(HERE, "..", "..", "build", "host", "bin", "trace_script")


def brute_share(rows, vcpu, ha, hb):
    """The definition: off cycles of [ha, hb) over its length, None when an unknown row overlaps."""
    mine = [r for r in rows if r["vcpu"] == vcpu]
    if any(min(r["end_host_tsc"], hb) > max(r["start_host_tsc"], ha) for r in mine if r["state"] == UNKNOWN_STATE):
        return None
    return sum(max(0, min(r["end_host_tsc"], hb) - max(r["start_host_tsc"], ha))
               for r in mine if r["state"] in OFF_STATES) / (hb - ha)


def random_timeline(rng, vcpus=3, n=400):
    rows = []
    for v in range(vcpus):
        t = 1000
        for _ in range(n):
            d = int(rng.integers(1, 500))
            rows.append({"vcpu": v, "tid": 9, "state": str(rng.choice(["on", "on", "off", "frozen", "unknown"])),
                         "start_host_tsc": t, "end_host_tsc": t + d, "phase": "p", "rep": 1})
            t += d
    return rows


def test_host_off_share_matches_the_per_row_sum():
    rng = np.random.default_rng(3)
    rows = random_timeline(rng)
    clock = {"offset_cycles": 0, "drift_ppm": 0.0, "ref_guest_tsc": 0, "points": [[0, 0, 1.0], [10 ** 6, 0, 1.0]]}
    for timeline in (rows, pd.DataFrame(rows)):  # rows as dicts (--trace) and the run's DataFrame
        share = trace_replay.host_off_fn(timeline, clock)
        v = rng.integers(0, 4, 3000)
        a = rng.integers(0, 110_000, 3000)
        b = a + rng.integers(1, 3000, 3000)
        got = share(v, a.astype(float), b.astype(float))
        want = [brute_share(rows, int(x), int(y), int(z)) for x, y, z in zip(v, a, b)]
        for i, w in enumerate(want):
            if w is None:
                assert np.isnan(got[i]), (v[i], a[i], b[i])
            else:
                assert got[i] == pytest.approx(w, abs=1e-9), (v[i], a[i], b[i])
        assert sum(1 for w in want if w) > 100 and sum(1 for w in want if w is None) > 100  # both kinds drawn


def test_clock_mapping_over_arrays_is_clockmaps():
    from spinlab_report.lhp import ClockMap
    clock = {"offset_cycles": 50, "drift_ppm": 3.0, "ref_guest_tsc": 0, "bound_max_cycles": 9.0,
             "points": [[1000, 50, 2.0], [5000, 58, 3.0], [9000, 57, 1.0]]}
    g = np.array([0, 999, 1000, 1001, 4999.5, 5000, 7777, 9000, 9001, 20000], dtype=np.float64)
    for c in (clock, {k: v for k, v in clock.items() if k != "points"}):
        cmap = ClockMap(c)
        host, bound = trace_replay.host_map(cmap, g)
        for i, x in enumerate(g):
            assert (host[i], bound[i]) == cmap.map(x), x


def test_one_mark_per_pixel_cell():
    x = np.array([0, 0, 1, 1, 0, 2])
    y = np.array([5, 5, 5, 6, 5, 5])
    assert dense.one_per_cell(x, y).tolist() == [0, 2, 3, 5]
    assert dense.pixel([0.0, 0.49, 0.5, 1.0, 7.0], 0.0, 1.0, 2).tolist() == [0, 0, 1, 1, 1]


def test_bars_merge_into_runs_of_covered_pixels():
    """Per pixel column, overlapping or touching bars become one run; the pixels covered stay the same."""
    col, lo, hi = dense.column_runs([0, 0, 0, 1, 1, 0, 2], [5, 7, 9, 1, 3, 20, 4], [6, 8, 12, 2, 3, 21, 4])
    assert list(zip(col.tolist(), lo.tolist(), hi.tolist())) == [(0, 5, 12), (0, 20, 21), (1, 1, 3), (2, 4, 4)]
    rng = np.random.default_rng(5)
    c = rng.integers(0, 50, 20_000)
    a = rng.integers(0, 400, 20_000)
    b = a + rng.integers(0, 30, 20_000)
    covered = {(int(x), r) for x, y, z in zip(c, a, b) for r in range(int(y), int(z) + 1)}
    rc, ra, rb = dense.column_runs(c, a, b)
    runs = {(int(x), r) for x, y, z in zip(rc, ra, rb) for r in range(int(y), int(z) + 1)}
    assert runs == covered and rc.size < 50 * 400 // 2
    x, y0, y1 = fig_holder_off.bars(2.0 ** (20 + c / 50 * 6), a / 400, b / 400, 20, 26, 120)
    assert x.size < dense.DENSE and np.all(y1 > y0)


def test_holder_off_figure_thins_dense_series_only():
    n = dense.DENSE + 1
    rng = np.random.default_rng(1)
    x = 2.0 ** rng.uniform(20, 26, n)
    y = rng.random(n)
    keep = fig_holder_off.thin(x, y, 20, 26, 120)
    assert keep.size < n and keep.size <= fig_holder_off.FIGSIZE[0] * 120 * fig_holder_off.FIGSIZE[1] * 120
    assert fig_holder_off.thin(x[:100], y[:100], 20, 26, 120).tolist() == list(range(100))
    # every kept mark stands for a pixel no other kept mark of the series covers
    col = dense.pixel(np.log2(x[keep]), 20, 26, 720)
    row = dense.pixel(y[keep], -0.04, 1.04, 504)
    assert len(set(zip(col.tolist(), row.tolist()))) == keep.size


def test_progress_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("SPINLAB_PROGRESS", raising=False)

    class Tty(io.StringIO):
        def isatty(self):
            return True
    for stream, shown in ((io.StringIO(), False), (Tty(), True)):
        with progress.stage("trace x.trace", progress.count(83000, "events"), stream=stream):
            pass
        text = stream.getvalue()
        assert ("spinlab-report: trace x.trace (83,000 events) ..." in text) == shown
        assert text.endswith(" s\n") == shown


@pytest.mark.skipif(not os.access(TRACE_SCRIPT, os.X_OK), reason="needs the host build (make host): trace_script")
def test_synthetic_run_keeps_the_contract(tmp_path):
    out = tmp_path / "syn"
    r = subprocess.run([sys.executable, GENERATOR, str(out), "--vcpus", "4", "--long-waits", "400", "--reps", "2",
                        "--duration", "2"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    run = reader.load_run(str(out))
    assert not run.problems, run.problems
    assert run.phases == ["idle-host", "host-load"] and len(run.snapshots) == 4
    waits = [w for s in run.snapshots for w in s.long_waits]
    assert len(waits) == 400
    for s in run.snapshots:  # the histograms hold the listed waits
        lw_hist = sum(int(c.wait[20:].sum()) for c in s.stats)
        assert lw_hist == len(s.long_waits)
    # the trace holds one long-wait event per listed wait
    a = trace_replay.replay(str(out / "snapshots" / "host-load-r1.trace"))
    assert len(a.long_waits) == len(next(s for s in run.snapshots if (s.phase, s.rep) == ("host-load", 1)).long_waits)


@pytest.mark.skipif(not os.access(TRACE_SCRIPT, os.X_OK), reason="needs the host build (make host): trace_script")
def test_column_export_reads_what_babeltrace2_reads(tmp_path):
    """The replay reads spinlab-collect's column export; babeltrace2 reads the CTF export of the
    same file. Both must give the same events, field by field, in the same order (every event
    type of the hand-made trace; an unsigned 32-bit 0xFFFFFFFF read as such)."""
    import bt2
    trace, ctf = tmp_path / "sm.trace", tmp_path / "ctf"
    subprocess.run([TRACE_SCRIPT, os.path.join(HERE, "traces", "state_machine.txt"), str(trace)], check=True)
    subprocess.run([trace_columns.find_collect(), "trace", "export", str(trace), "--format", "ctf", "-o", str(ctf)],
                   check=True, capture_output=True)

    def value(v):
        return str(v) if isinstance(v, bt2._StringFieldConst) else (
            [int(x) for x in v] if isinstance(v, bt2._ArrayFieldConst) else int(v))
    via_bt2 = []
    for m in bt2.TraceCollectionMessageIterator(str(ctf)):
        if type(m) is bt2._EventMessageConst:
            e, ctx = m.event, m.event.common_context_field
            via_bt2.append((m.default_clock_snapshot.value, int(e.packet.context_field["cpu_id"]), e.name,
                            int(ctx["thread_id"]), int(ctx["process_id"]),
                            {k: value(v) for k, v in e.payload_field.items()}))
    via_bt2.sort(key=lambda e: (e[0], e[1]))  # stable: within a CPU, babeltrace2's (the file's) order
    t = trace_columns.read(str(trace))
    common = set(trace_columns.COMMON) | {"index"}
    via_columns = [(f["tsc"], f["cpu"], name, f[trace_columns.TID], f[trace_columns.PID],
                    {k: v for k, v in f.items() if k not in common}) for name, f in t.rows(list(t.events))]
    assert len(t.events) >= 8 and len(via_columns) == len(via_bt2) == t.count()
    assert via_columns == via_bt2
    assert any(f.get("holder_cpu_start") == 0xFFFFFFFF for *_, f in via_columns)


def _spy_on_forks(monkeypatch) -> list:
    """Two CPUs for parallel.py, and the list of the process pools it starts."""
    from spinlab_report import parallel
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("SPINLAB_REPORT_WORKERS", raising=False)
    calls, real = [], parallel.multiprocessing.get_context

    def spy(kind):
        calls.append(kind)
        return real(kind)
    monkeypatch.setattr(parallel.multiprocessing, "get_context", spy)
    return calls


@pytest.mark.skipif(not os.access(TRACE_SCRIPT, os.X_OK), reason="needs the host build (make host): trace_script")
def test_snapshots_and_figures_in_parallel_are_the_same(tmp_path, monkeypatch):
    """A large run's snapshots are read, and any run's figures drawn, in forked processes: the same
    snapshots (every long-wait column), and the same figures, as one process makes."""
    from spinlab_report import aggregate, attribution, figures, summary
    out = tmp_path / "syn"
    subprocess.run([sys.executable, GENERATOR, str(out), "--vcpus", "4", "--long-waits", "800", "--reps", "2",
                    "--duration", "2"], check=True, capture_output=True, timeout=120)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 1 << 40)
    monkeypatch.setenv("SPINLAB_REPORT_WORKERS", "1")  # figures: one process
    one = reader.load_run(str(out))
    opts = summary.Options()
    att = attribution.attribute_run(one, opts.long_wait_threshold)
    counters = aggregate.counters(one)
    figs_one = figures.draw(one, att, counters, summary.summarise(one, att, counters, opts), str(tmp_path / "f1"), opts)
    calls = _spy_on_forks(monkeypatch)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 0)
    two = reader.load_run(str(out))
    assert calls == ["fork"]
    assert [(s.phase, s.rep) for s in one.snapshots] == [(s.phase, s.rep) for s in two.snapshots]
    for a, b in zip(one.snapshots, two.snapshots):
        assert list(a.long_waits) == list(b.long_waits) and len(a.long_waits) > 0
        assert [st.wait.tolist() for st in a.stats] == [st.wait.tolist() for st in b.stats]
    att = attribution.attribute_run(two, opts.long_wait_threshold)
    counters = aggregate.counters(two)
    figs_two = figures.draw(two, att, counters, summary.summarise(two, att, counters, opts), str(tmp_path / "f2"), opts)
    assert calls == ["fork", "fork"]
    assert list(figs_one) == list(figs_two) and len(figs_one) == 10
    for name, f in figs_one.items():
        g = figs_two[name]
        assert (f.title, f.caption, f.missing) == (g.title, g.caption, g.missing)
        assert (f.png is None) == (g.png is None) and (f.png is None or os.path.getsize(g.png) > 1000)


@pytest.mark.skipif(not os.access(TRACE_SCRIPT, os.X_OK), reason="needs the host build (make host): trace_script")
def test_trace_section_in_parallel_is_the_same(tmp_path, monkeypatch):
    from spinlab_report import trace_section
    out = tmp_path / "syn"
    subprocess.run([sys.executable, GENERATOR, str(out), "--vcpus", "4", "--long-waits", "800", "--reps", "2",
                    "--duration", "2"], check=True, capture_output=True, timeout=120)
    run = reader.load_run(str(out))
    figdir = str(tmp_path / "figures")
    monkeypatch.setenv("SPINLAB_REPORT_WORKERS", "1")
    one, one_problems = trace_section.run_section(run, figdir)
    monkeypatch.delenv("SPINLAB_REPORT_WORKERS")
    monkeypatch.setattr(trace_section, "PARALLEL_BYTES", 1 << 40)  # small files: side by side because several
    calls = _spy_on_forks(monkeypatch)
    two, two_problems = trace_section.run_section(run, figdir)
    assert one_problems == two_problems == []
    assert calls == ["fork"]
    assert one == two and sum(1 for b in one if b[0] == "h2" and b[1].startswith("Trace: ")) == 4
    assert "off-CPU on the host" in str(one)  # the long waits were measured against the host timeline


def test_figures_with_a_row_per_cpu_stop_growing():
    from spinlab_report.plotting import ROWS_MAX_INCHES, rows_height
    assert rows_height(2, 0.6, 1.2) == 1.2 + 0.6 * 2  # small runs: the figure as before
    assert rows_height(64, 0.6, 1.2) == 1.2 + ROWS_MAX_INCHES


def test_a_report_attributes_each_snapshots_waits_once(tmp_path, monkeypatch):
    """report.generate measures and classes each snapshot's long waits once (lhp.classify), for
    summary.json, the verdict and every figure: they all read the one Attribution it makes (issue
    53). The figures are drawn in this process (SPINLAB_REPORT_WORKERS=1), so that one attributing
    again would be counted here."""
    from spinlab_report import lhp, report, summary
    monkeypatch.setenv("SPINLAB_REPORT_WORKERS", "1")
    run = reader.load_run(os.path.join(HERE, "data", "run-basic"))
    calls = []
    real = lhp.classify
    monkeypatch.setattr(lhp, "classify", lambda snap, *a: calls.append((snap.phase, snap.rep)) or real(snap, *a))
    report.generate(run, str(tmp_path), summary.Options())
    listed = [(s.phase, s.rep) for s in run.snapshots if s.long_waits is not None]
    assert len(listed) == 4 and sorted(calls) == sorted(listed)


def test_the_package_keeps_no_module_level_mutable_state():
    """No module of the package keeps a cache or any other state between calls at module level: no
    global statement, and no module-level dict, list or set that a function changes. What one step
    computes, the next is handed (issue 53). parallel._fn is the one exception: the function of the
    forked_map under way, set for the children it forks to inherit, and cleared after."""
    package = os.path.join(os.path.dirname(HERE), "spinlab_report")
    allowed = {("parallel", "_fn")}
    found = []
    for f in sorted(os.listdir(package)):
        if not f.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(package, f)).read())
        mod = f[:-3]
        mutable = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)
                   if isinstance(node.value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp))
                   or isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in ("dict", "list", "set")}
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if isinstance(n, ast.Global):
                    found += [(mod, name, n.lineno) for name in n.names if (mod, name) not in allowed]
                changed = (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else
                           [n.func.value] if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in
                           ("update", "append", "extend", "insert", "setdefault", "pop", "popitem", "clear", "add",
                            "discard", "remove") else [])
                for t in changed:
                    while isinstance(t, ast.Subscript):  # _cache["waits"][key] = ...: _cache is changed
                        t = t.value
                    if isinstance(t, ast.Name) and t.id in mutable and (mod, t.id) not in allowed \
                            and not _bound_in(fn, t.id):
                        found.append((mod, t.id, n.lineno))
    assert not found, f"module-level state changed by a function (module, name, line): {found}"


def _bound_in(fn, name: str) -> bool:
    """Whether name is a parameter or local variable of fn (then it is not the module's)."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    stores = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    globals_ = {g for n in ast.walk(fn) if isinstance(n, ast.Global) for g in n.names}
    return (name in params or name in stores) and name not in globals_


def test_the_report_names_its_stages_with_counts(tmp_path):
    """spinlab-report on a terminal (SPINLAB_PROGRESS=1 stands for one; that nothing is printed
    without one is test_progress_on_a_terminal_only): reading, the summary and verdict with the
    long waits counted, the figures."""
    from conftest import BASIC, TOOL
    r = subprocess.run([sys.executable, TOOL, BASIC, "--out", str(tmp_path)], capture_output=True, text=True,
                       env={**os.environ, "SPINLAB_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    for line in ("spinlab-report: read ", "spinlab-report: summary and verdict (8 long waits) ...",
                 "spinlab-report: figures (10 figures) ..."):
        assert line in r.stderr, r.stderr
