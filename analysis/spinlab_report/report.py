"""Write everything for one run: table.txt, table.csv, summary.json (with the verdict), figures/,
report.md, report.html; for a run booted with timing=all also wrk-table.txt (wrk_table.py).

The steps, each read by the next: the run as loaded (reader.py), its long waits attributed once
(attribution.attribute_run), the summary and the verdict over that attribution, the figures over
both, the report's document rendered (report_doc, render_md, render_html)."""
import json
import os

from . import aggregate, attribution, progress, render_html, render_md, report_doc, summary, table, trace_section, trace_replay
from . import trace_stacks, verdict
from . import kvm_stats, parallel, wrk_table
from . import (fig_class_waits, fig_cpu_heatmap, fig_hold_cdf, fig_holder_off, fig_long_wait_window,
               fig_throughput, fig_wait_ccdf, fig_wait_cdf, fig_wait_cdf_phases, fig_wait_hist)
from .names import LONG_WAIT_THRESHOLD


def phase_tables(run) -> tuple[dict, dict]:
    """(phase -> Totals or None when missing, phase -> number of repetitions)."""
    totals = {p: aggregate.phase_totals(run.snaps(p)) if run.snaps(p) else None for p in run.phases}
    return totals, {p: len(run.snaps(p)) for p in run.phases}


def write(path: str, text: str):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def make_figures(run, att, summ: dict, figdir: str, opts) -> dict:
    """The run's figures, drawn side by side in forked processes (parallel.py; the slowest first:
    they take turns on the CPUs in this order), those of long waits from att (the run's
    Attribution, inherited by the processes). Even make run's small report gains: its figures
    take 3 s in one process, 2 in two."""
    makers = [lambda: fig_holder_off.make(run, att, figdir), lambda: fig_cpu_heatmap.make(run, figdir),
              lambda: fig_long_wait_window.make(run, att, figdir),
              lambda: fig_wait_ccdf.make(run, figdir, opts.long_wait_threshold), lambda: fig_wait_cdf.make(run, figdir),
              lambda: fig_wait_cdf_phases.make(run, figdir), lambda: fig_wait_hist.make(run, figdir),
              lambda: fig_hold_cdf.make(run, figdir), lambda: fig_class_waits.make(run, figdir),
              lambda: fig_throughput.make(run, summ, figdir)]
    figs = parallel.forked_map(lambda i: makers[i](), range(len(makers)))
    return {f.name: f for f in figs}


def generate(run, outdir: str, opts: summary.Options) -> dict:
    """Write the report files into outdir; returns {kind: path} of what was written."""
    os.makedirs(outdir, exist_ok=True)
    totals, reps = phase_tables(run)
    text = table.table_text(totals, reps)
    listed = sum(len(s.long_waits or ()) for s in run.snapshots)
    with progress.stage("summary and verdict", progress.count(listed, "long waits")):
        att = attribution.attribute_run(run, opts.long_wait_threshold)
        summ = summary.summarise(run, att, opts)
        summ["verdict"] = verdict.judge(run, att, summ)
    paths = {"table": os.path.join(outdir, "table.txt"), "csv": os.path.join(outdir, "table.csv"),
             "summary": os.path.join(outdir, "summary.json"), "md": os.path.join(outdir, "report.md"),
             "html": os.path.join(outdir, "report.html")}
    write(paths["table"], text)
    write(paths["csv"], table.table_csv(totals))
    with progress.stage("figures", "10 figures"):
        figs = make_figures(run, att, summ, os.path.join(outdir, "figures"), opts)
    del att  # drawn: its memory (about 1 KB a wait) is free before the traces are replayed
    traces, trace_problems = trace_section.run_section(run, os.path.join(outdir, "figures"), opts.long_wait_threshold)
    summ["problems"] += trace_problems  # a trace file it cannot read is a problem of the run
    write(paths["summary"], json.dumps(summ, indent=1) + "\n")
    doc = report_doc.build(run, summ, text, figs, opts)
    wrk = wrk_table.section(run.meta, totals, reps)  # a timing=all run: the original's own table
    if wrk:
        paths["wrk_table"] = os.path.join(outdir, "wrk-table.txt")
        write(paths["wrk_table"], wrk[-1][1])
    kvm = kvm_stats.section(summ["kvm_stats"])  # under KVM: its per-vCPU counters per phase
    if traces or wrk or kvm:  # before the run's settings, which close the report
        at = next((i for i, b in enumerate(doc) if b == ("h2", "The run")), len(doc))
        doc[at:at] = kvm + wrk + traces
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
