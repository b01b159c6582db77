"""The run's figures (fig_*.py), drawn side by side in forked processes (parallel.py).

Each figure reads what the steps before made: the run as loaded, its counters merged per phase
(aggregate.Counters), its long waits attributed (attribution.Attribution) and summary.json's
figures; it returns a plotting.Figure, which report_doc places."""
from . import (fig_class_waits, fig_cpu_heatmap, fig_hold_cdf, fig_holder_off, fig_long_wait_window,
               fig_throughput, fig_wait_ccdf, fig_wait_cdf, fig_wait_cdf_phases, fig_wait_hist, parallel)


def draw(run, att, counters, summ: dict, figdir: str, opts) -> dict:
    """{name: Figure} of the run's figures, drawn in forked processes (the slowest first: they take
    turns on the CPUs in this order), those of long waits from att (inherited by the processes).
    Even make run's small report gains: its figures take 3 s in one process, 2 in two."""
    totals = {p: t for p, t in counters.totals.items() if t is not None}
    makers = [lambda: fig_holder_off.make(run, att, figdir), lambda: fig_cpu_heatmap.make(run, totals, figdir),
              lambda: fig_long_wait_window.make(run, att, figdir),
              lambda: fig_wait_ccdf.make(run, figdir, opts.long_wait_threshold), lambda: fig_wait_cdf.make(run, figdir),
              lambda: fig_wait_cdf_phases.make(run, figdir), lambda: fig_wait_hist.make(run.phases, totals, figdir),
              lambda: fig_hold_cdf.make(run, figdir), lambda: fig_class_waits.make(run, counters.classes, figdir),
              lambda: fig_throughput.make(run, summ, figdir)]
    figs = parallel.forked_map(lambda i: makers[i](), range(len(makers)))
    return {f.name: f for f in figs}
