"""--compare: several runs side by side (lock algorithms, pause on/off, accelerators...).

Writes summary.json (each run's summary), differences.csv, report.md and report.html with the
comparison figures. Differences are relative to the first run named on the command line.
"""
import csv
import io
import json
import os

from . import aggregate, attribution, fig_compare, render_html, render_md, summary, verdict
from .contract import K
from .report_doc import META_FIELDS, cycles, pct, throughput_metric
from .report import write

METRICS = [("acquisitions", "acquisitions", str), ("contended_share", "contended share", pct),
           ("wait_p50_cycles", "p50 wait (cycles)", cycles), ("wait_p99_cycles", "p99 wait (cycles)", cycles),
           ("wait_p999_cycles", "p99.9 wait (cycles)", cycles),
           ("share_waits_ge_2^20", "waits \u2265 2^20", lambda x: pct(x, 3))]


def metric(s: dict, key: str):
    if key == "lhp_share":
        return s.get("lhp", {}).get("share")
    if key == "throughput":
        return (s.get("throughput") or {}).get("mean")
    return s.get(key)


def difference_rows(summaries: list) -> list:
    """[phase, metric, value per run..., change of each later run vs the first (%)] rows (raw numbers)."""
    phases = []
    for s in summaries:
        phases += [p for p in s["phases"] if p not in phases]
    keys = [k for k, _, _ in METRICS] + ["lhp_share", "throughput"]
    rows = []
    for p in phases:
        for k in keys:
            vals = [metric(s["phases"].get(p, {}), k) for s in summaries]
            base = vals[0]
            changes = [None if v is None or not base else (v - base) / base * 100.0 for v in vals[1:]]
            rows.append([p, k] + vals + changes)
    return rows


def differing_meta(runs) -> list:
    """Meta fields whose values are not the same in every run: what the comparison is about."""
    return [[label] + [str(getattr(r.meta, k)) for r in runs] for k, label in META_FIELDS
            if k != K.run_id and len({json.dumps(getattr(r.meta, k), sort_keys=True) for r in runs}) > 1]


def verdict_rows(labels, summaries) -> tuple[list, list]:
    """The verdict table with a run column: one row per run and non-baseline phase."""
    rows, head = [], None
    for label, s in zip(labels, summaries):
        h, vr = verdict.table(s["verdict"])
        head = head or ["run"] + h[:1] + [c.replace(f"× {s['verdict']['baseline_phase']}", "× baseline") for c in h[1:]]
        base = s["verdict"]["baseline_phase"]
        rows += [[label] + r for r in vr if r[0] != base] or [[label, "(no phase besides the baseline)"] +
                                                                ["—"] * (len(h) - 1)]
    return head, rows


def _throughput_metric(summaries) -> str:
    """The runs' throughput metric; the runs' own names joined when they count different things."""
    names = list(dict.fromkeys(throughput_metric(s) for s in summaries))
    return names[0] if len(names) == 1 else " | ".join(names)


def generate(runs, outdir: str, opts: summary.Options) -> dict:
    os.makedirs(outdir, exist_ok=True)
    labels = [r.run_id if [x.run_id for x in runs].count(r.run_id) == 1 else f"{r.run_id} #{i + 1}"
              for i, r in enumerate(runs)]
    summaries = []
    for r in runs:  # each run attributed once, for its summary and its verdict
        att = attribution.attribute_run(r, opts.long_wait_threshold)
        summaries.append(summary.summarise(r, att, aggregate.counters(r), opts))
        summaries[-1]["verdict"] = verdict.judge(r, att, summaries[-1])
    rows = difference_rows(summaries)
    paths = {"summary": os.path.join(outdir, "summary.json"), "csv": os.path.join(outdir, "differences.csv"),
             "md": os.path.join(outdir, "report.md"), "html": os.path.join(outdir, "report.html")}
    write(paths["summary"], json.dumps({"format": 1, "runs": labels, "summaries": summaries}, indent=1) + "\n")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["phase", "metric"] + labels + [f"change_pct_{x}_vs_{labels[0]}" for x in labels[1:]])
    w.writerows([["" if v is None else v for v in r] for r in rows])
    write(paths["csv"], buf.getvalue())
    figdir = os.path.join(outdir, "figures")
    figs = [fig_compare.make_ccdf(runs, labels, figdir), fig_compare.make_cdf(runs, labels, figdir),
            fig_compare.make_throughput(summaries, labels, figdir)]
    fmt = {k: f for k, _, f in METRICS} | {"lhp_share": lambda x: pct(x, 1),
                                           "throughput": lambda x: "—" if x is None else f"{x:,.1f}"}
    names = {k: n for k, n, _ in METRICS} | {"lhp_share": f"LHP share (\u2265 {opts.long_wait_threshold})",
                                             "throughput": _throughput_metric(summaries)}
    n = len(runs)
    table = [[r[0], names[r[1]]] + [fmt[r[1]](v) if v is not None else "—" for v in r[2:2 + n]]
             + ["—" if c is None else f"{c:+.1f}%" for c in r[2 + n:]] for r in rows]
    problems = [f"{label}: {p}" for label, s in zip(labels, summaries) for p in s["problems"]]
    vhead, vrows = verdict_rows(labels, summaries)
    doc = [("h1", "spinlab comparison: " + " vs ".join(labels)),
           ("h2", "Verdict per run"),
           ("p", "One row per run and phase compared with that run's baseline; the tests and intervals are "
                    "within each run, across its repetitions (see each run's report for the method)."),
           ("table", vhead, vrows), ("figure", figs[0]), ("h2", "What differs between the runs"),
           ("table", ["setting"] + labels, differing_meta(runs)) if differing_meta(runs) else
           ("p", "The runs' recorded settings are identical; they differ only in when they ran."),
           ("h2", "What is missing"), ("list", problems) if problems else ("p", "Nothing: every run is complete."),
           ("h2", "Differences"), ("table", ["phase", "metric"] + labels + [f"{x} vs {labels[0]}" for x in labels[1:]],
                                   table)]
    doc += [("figure", f) for f in figs[1:]]
    write(paths["md"], render_md.render(doc, outdir))
    write(paths["html"], render_html.render(doc))
    return paths
