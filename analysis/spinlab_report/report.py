"""Write everything for one run: table.txt, table.csv, summary.json (with the verdict), figures/,
report.md, report.html; for a run booted with timing=all also wrk-table.txt (wrk_table.py).

The steps, each read by the next: the run as loaded (reader.py), its counters merged per phase
and checked (aggregate.counters: the log2 tables' totals), its long waits attributed once
(attribution.attribute_run), the summary and the verdict over both, the figures (figures.py),
the traces' sections (trace_section.py), the report's document rendered (report_doc, render_md,
render_html)."""
import json
import os

from . import aggregate, attribution, figures, progress, render_html, render_md, report_doc, summary, table
from . import kvm_stats, trace_section, trace_replay, trace_stacks, verdict, wrk_table
from .names import LONG_WAIT_THRESHOLD


def write(path: str, text: str):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generate(run, outdir: str, opts: summary.Options) -> dict:
    """Write the report files into outdir; returns {kind: path} of what was written."""
    os.makedirs(outdir, exist_ok=True)
    paths = {"table": os.path.join(outdir, "table.txt"), "csv": os.path.join(outdir, "table.csv"),
             "summary": os.path.join(outdir, "summary.json"), "md": os.path.join(outdir, "report.md"),
             "html": os.path.join(outdir, "report.html")}
    figdir = os.path.join(outdir, "figures")
    counters = aggregate.counters(run)
    text = table.table_text(counters.totals, counters.repetitions)
    write(paths["table"], text)
    write(paths["csv"], table.table_csv(counters.totals))
    listed = sum(len(s.long_waits or ()) for s in run.snapshots)
    with progress.stage("summary and verdict", progress.count(listed, "long waits")):
        att = attribution.attribute_run(run, opts.long_wait_threshold)
        summ = summary.summarise(run, att, counters, opts)
        summ["verdict"] = verdict.judge(run, att, summ)
    with progress.stage("figures", "10 figures"):
        figs = figures.draw(run, att, counters, summ, figdir, opts)
    del att  # drawn: its memory (about 1 KB a wait) is free before the traces are replayed
    traces, trace_problems = trace_section.run_section(run, figdir, opts.long_wait_threshold)
    summ["problems"] += trace_problems  # a trace file it cannot read is a problem of the run
    write(paths["summary"], json.dumps(summ, indent=1) + "\n")
    kvm = kvm_stats.section(summ["kvm_stats"])  # under KVM: its per-vCPU counters per phase
    wrk = wrk_table.section(run.meta, counters.totals, counters.repetitions)  # a timing=all run: the original's own table
    if wrk:
        paths["wrk_table"] = os.path.join(outdir, "wrk-table.txt")
        write(paths["wrk_table"], wrk[-1][1])
    doc = report_doc.document(run, summ, text, counters.classes, figs, kvm + wrk + traces, opts)
    write(paths["md"], render_md.render(doc, outdir))
    write(paths["html"], render_html.render(doc))
    return paths


def generate_trace(path: str, outdir: str, clock=None, timeline=None, long_wait_threshold=LONG_WAIT_THRESHOLD) -> dict:
    """`spinlab-report --trace FILE`: the Trace section alone, as report.md and report.html."""
    os.makedirs(outdir, exist_ok=True)
    a = trace_replay.replay(path, long_wait_threshold=long_wait_threshold, timeline=timeline, clock=clock)
    doc = [("h1", f"spinlab trace report: {os.path.basename(path)}")]
    doc += trace_section.blocks(a, os.path.join(outdir, "figures"), os.path.basename(path))
    if not os.path.isdir(path):  # a native trace file (not a CTF export): its call stacks, if any
        doc += trace_stacks.blocks(trace_stacks.run([path], outdir))
    paths = {"md": os.path.join(outdir, "report.md"), "html": os.path.join(outdir, "report.html")}
    write(paths["md"], render_md.render(doc, outdir))
    write(paths["html"], render_html.render(doc))
    return paths
